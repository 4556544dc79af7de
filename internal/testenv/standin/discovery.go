package standin

import (
	"crypto/sha512"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The discovery documents of a real kube-apiserver (v1.37.1, no
// aggregated APIs), as it answers /version and, aggregated, /api and /apis;
// and the objects it starts with that a rollout reads (seed.json: its
// Namespaces and local APIServices).
//
//go:embed testdata/version.json testdata/api.json testdata/apis.json testdata/seed.json
var recorded embed.FS

// aggregatedType is the media type of aggregated discovery (v2).
const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// discovery answers the discovery documents, and knows the resources.
type discovery struct {
	version, api, apis []byte
	etagAPI, etagAPIs  string
	resources          map[schema.GroupVersionResource]*resource
	// legacy are the unaggregated documents, by path ("api", "apis",
	// "apis/apps", "api/v1", "apis/apps/v1").
	legacy map[string][]byte
}

// loadDiscovery reads the recorded documents, and makes the unaggregated
// ones from them.
func loadDiscovery() (*discovery, error) {
	d := &discovery{resources: map[schema.GroupVersionResource]*resource{}, legacy: map[string][]byte{}}
	var err error
	if d.version, err = recorded.ReadFile("testdata/version.json"); err != nil {
		return nil, err
	}
	if d.api, err = recorded.ReadFile("testdata/api.json"); err != nil {
		return nil, err
	}
	if d.apis, err = recorded.ReadFile("testdata/apis.json"); err != nil {
		return nil, err
	}
	d.etagAPI, d.etagAPIs = etag(d.api), etag(d.apis)
	var groups metav1.APIGroupList
	for _, doc := range [][]byte{d.api, d.apis} {
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(doc, &list); err != nil {
			return nil, fmt.Errorf("recorded discovery: %w", err)
		}
		for _, g := range list.Items {
			group := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.Name}
			for _, v := range g.Versions {
				gv := schema.GroupVersion{Group: g.Name, Version: v.Version}
				group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: v.Version})
				b, err := d.addVersion(gv, v.Resources)
				if err != nil {
					return nil, err
				}
				prefix := "apis/" + g.Name
				if g.Name == "" {
					prefix = "api"
				}
				d.legacy[prefix+"/"+v.Version] = b
			}
			if len(group.Versions) == 0 {
				continue
			}
			group.PreferredVersion = group.Versions[0]
			if g.Name == "" {
				b, err := json.Marshal(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
					ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1:6443"}}})
				if err != nil {
					return nil, err
				}
				d.legacy["api"] = b
				continue
			}
			b, err := json.Marshal(group)
			if err != nil {
				return nil, err
			}
			d.legacy["apis/"+g.Name] = b
			group.TypeMeta = metav1.TypeMeta{}
			groups.Groups = append(groups.Groups, group)
		}
	}
	groups.TypeMeta = metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}
	b, err := json.Marshal(groups)
	if err != nil {
		return nil, err
	}
	d.legacy["apis"] = b
	return d, nil
}

// addVersion records the resources of group version gv and returns its
// unaggregated APIResourceList.
func (d *discovery) addVersion(gv schema.GroupVersion, resources []apidiscoveryv2.APIResourceDiscovery) ([]byte, error) {
	rl := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	for _, r := range resources {
		kind := ""
		if r.ResponseKind != nil {
			kind = r.ResponseKind.Kind
		}
		namespaced := r.Scope == apidiscoveryv2.ScopeNamespace
		d.resources[gv.WithResource(r.Resource)] = &resource{gvr: gv.WithResource(r.Resource), kind: kind, namespaced: namespaced, verbs: r.Verbs}
		rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: namespaced, Kind: kind, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
		for _, sub := range r.Subresources {
			sk := ""
			if sub.ResponseKind != nil {
				sk = sub.ResponseKind.Kind
			}
			rl.APIResources = append(rl.APIResources, metav1.APIResource{Name: r.Resource + "/" + sub.Subresource, Namespaced: namespaced, Kind: sk, Verbs: sub.Verbs})
		}
	}
	return json.Marshal(rl)
}

func etag(b []byte) string {
	h := sha512.Sum512(b)
	return `"` + strings.ToUpper(hex.EncodeToString(h[:])) + `"`
}

// resource is the resource gvr, nil when discovery does not name it.
func (d *discovery) resource(gvr schema.GroupVersionResource) *resource {
	return d.resources[gvr]
}

// serve answers the discovery document at path ("version", "api",
// "apis", "apis/G", "api/v1", "apis/G/V"): aggregated when the client
// accepts it, as kube-apiserver does, with an ETag.
func (d *discovery) serve(w http.ResponseWriter, r *http.Request, path string) {
	if path == "version" {
		writeBody(w, r, http.StatusOK, "application/json", d.version)
		return
	}
	if (path == "api" || path == "apis") && strings.Contains(r.Header.Get("Accept"), "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
		doc, tag := d.api, d.etagAPI
		if path == "apis" {
			doc, tag = d.apis, d.etagAPIs
		}
		w.Header().Set("ETag", tag)
		w.Header().Set("Vary", "Accept")
		w.Header().Set("Cache-Control", "public")
		if r.Header.Get("If-None-Match") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeBody(w, r, http.StatusOK, aggregatedType, doc)
		return
	}
	if b, ok := d.legacy[path]; ok {
		writeBody(w, r, http.StatusOK, "application/json", b)
		return
	}
	writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, ""))
}
