package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
)

// ReadOnlyKubeconfig serves delivered cluster c to reads only, on a
// loopback port of this process, and writes a kubeconfig (0600, in the
// folder of sources) that reaches it with a token of its own. It is
// what a check, or exec, of a delivered cluster gets instead of the
// context: the context's credentials could write, and never leave this
// process. Every request goes through readOnly, as the plugin's own do,
// as the command's identity (impersonation included); what the caller
// sends of its own credentials or impersonation is dropped. stop stops
// serving and removes the file.
func ReadOnlyKubeconfig(cf *genericclioptions.ConfigFlags, sources *KubeconfigSources, f *fleet.Fleet, c *fleet.Cluster) (path string, stop func(), err error) {
	if f.DeliveryOf(c) == nil {
		return "", nil, errors.New("cluster " + c.Name + " is not delivered through a registry")
	}
	flags := ForCluster(cf, f, c)
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return "", nil, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace() // -n, else the context's
	if err != nil {
		return "", nil, err
	}
	h, err := readOnlyHandler(cfg, c.Name)
	if err != nil {
		return "", nil, err
	}
	cert, caPEM, err := loopbackCertificate()
	if err != nil {
		return "", nil, err
	}
	// TLS, since kubectl sends no token over plain HTTP, and so that
	// nothing on the machine reads the token on its way.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h.authorized(), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stopServing := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close() // a watch still open
		}
	}
	name := "kubectl-fleet-" + c.Name
	raw := clientcmdapi.NewConfig()
	raw.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + ln.Addr().String(), CertificateAuthorityData: caPEM}
	raw.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: h.token}
	raw.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: ns}
	raw.CurrentContext = name
	if path, err = sources.WriteTemp(raw); err != nil {
		stopServing()
		return "", nil, err
	}
	return path, func() { stopServing(); _ = os.Remove(path) }, nil
}

// loopbackCertificate is a self-signed certificate for 127.0.0.1, made
// for one proxy and kept in memory, and its PEM: the kubeconfig's
// certificate authority.
func loopbackCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "kubectl-fleet read-only proxy"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// readOnlyProxy forwards what a token-holder asks to a cluster through
// a transport that reads only.
type readOnlyProxy struct {
	token   string
	cluster string
	proxy   *httputil.ReverseProxy
}

func readOnlyHandler(cfg *rest.Config, cluster string) (*readOnlyProxy, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	if target.Scheme == "" { // a host:port, as client-go takes it
		target, err = url.Parse("https://" + cfg.Host)
		if err != nil {
			return nil, err
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	p := &readOnlyProxy{token: hex.EncodeToString(secret), cluster: cluster}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			// The caller's token is this proxy's, and impersonation is
			// the command's (the transport's) alone.
			for name := range r.Out.Header {
				if strings.EqualFold(name, "Authorization") || strings.HasPrefix(strings.ToLower(name), "impersonate-") {
					r.Out.Header.Del(name)
				}
			}
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler:  p.failed,
	}
	return p, nil
}

// authorized serves only requests that carry the token.
func (p *readOnlyProxy) authorized() http.Handler {
	want := []byte("Bearer " + p.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeStatus(w, apierrors.NewUnauthorized("kubectl fleet's read-only proxy of cluster "+p.cluster+" takes only the token of the kubeconfig it wrote"))
			return
		}
		p.proxy.ServeHTTP(w, r)
	})
}

// failed answers a request the transport refused (a write: Forbidden,
// saying why) or could not send.
func (p *readOnlyProxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	var refused *WriteRefusedError
	if errors.As(err, &refused) {
		writeStatus(w, apierrors.NewForbidden(schema.GroupResource{}, "", refused))
		return
	}
	writeStatus(w, apierrors.NewServiceUnavailable("cluster "+p.cluster+": "+err.Error()))
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(&status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}
