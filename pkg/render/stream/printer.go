package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/encode"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/object"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/output"
)

// Options say where and how a Printer writes clusters' objects.
type Options struct {
	// Out receives the YAML stream, or the JSON lines.
	Out io.Writer
	// JSON prints a RenderedCluster per line instead of YAML.
	JSON bool
	// ShowSecrets prints Secret values, and the values Mask holds, on
	// Out instead of masking them.
	ShowSecrets bool
	// Mask holds the values decrypted from SOPS files: masked on Out in
	// any object, and, in Dir, the files that hold one are 0600.
	Mask *mask.Set
	// Dir, when set, is where the clusters go instead of Out:
	// Dir/<cluster>/<ObjectFileName>, Secrets as rendered. A cluster's
	// .yaml files that the last render wrote there are removed first.
	Dir string
	// Decrypt writes SOPS-encrypted files' values decrypted into Dir,
	// which leaves them encrypted otherwise (Secrets).
	Decrypt bool
	// Progress receives a line per cluster written to Dir, after the
	// cluster's Prefix (Prefix must be set with Dir), and the notes of
	// files left encrypted (Undecrypted).
	Progress io.Writer
	Prefix   *output.Prefixer
}

// A Printer writes clusters' objects in order: one YAML stream, JSON
// lines, or Dir's folders.
type Printer struct {
	o Options
	// documents counts the YAML documents printed, for separators.
	documents int
}

// NewPrinter returns a printer that writes as o says.
func NewPrinter(o Options) *Printer { return &Printer{o: o} }

// Print writes one cluster's objects, after the clusters printed before.
func (p *Printer) Print(c *fleet.Cluster, objs []*unstructured.Unstructured) error {
	ch, err := p.encode(objs)
	if err != nil {
		return err
	}
	return p.flush(c, []chunk{ch})
}

// RenderedCluster is what a JSON Printer prints for each cluster
// ("type": "render").
type RenderedCluster struct {
	Type    string           `json:"type"`
	Cluster string           `json:"cluster"`
	Group   string           `json:"group"`
	Objects []map[string]any `json:"objects"`
}

var unsafeFileChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// ObjectFileName names an object's file in a cluster's folder:
// <kind>_<namespace>_<name>.yaml, or <kind>_<name>.yaml without namespace.
func ObjectFileName(o *unstructured.Unstructured) string {
	parts := []string{o.GetKind()}
	if ns := o.GetNamespace(); ns != "" {
		parts = append(parts, ns)
	}
	parts = append(parts, o.GetName())
	for i, p := range parts {
		parts[i] = unsafeFileChars.ReplaceAllString(strings.ToLower(p), "-")
	}
	return strings.Join(parts, "_") + ".yaml"
}

// chunk is one target's objects, encoded on the worker that rendered them.
type chunk struct {
	objects int
	// create is the Namespace the target's app asks to be created, and
	// namespaces those its render has (render.NamespacesToCreate).
	create     string
	namespaces []string
	// data is YAML documents separated by "---", or JSON objects
	// separated by commas.
	data []byte
	// files are Dir's, named when the cluster is written.
	files []objectFile
}

type objectFile struct {
	name string // ObjectFileName
	data []byte
	// private files (Secrets, objects holding a decrypted value) are
	// written 0600.
	private bool
}

// encode masks (on Out) and encodes objects; it is safe for concurrent
// use.
func (p *Printer) encode(objs []*unstructured.Unstructured) (c chunk, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = chunk{}, fmt.Errorf("encoding: recovered from panic: %v", r)
		}
	}()
	c.objects = len(objs)
	if p.o.Dir != "" {
		c.files = make([]objectFile, len(objs))
		for i, obj := range objs {
			y, err := encode.AppendYAML(nil, obj.Object)
			if err != nil {
				return chunk{}, err
			}
			_, sensitive := p.o.Mask.Object(obj.Object)
			c.files[i] = objectFile{name: ObjectFileName(obj), data: y, private: sensitive || obj.GetKind() == "Secret"}
		}
		return c, nil
	}
	for i, obj := range objs {
		if !p.o.ShowSecrets {
			obj = object.MaskSecret(obj)
			if m, masked := p.o.Mask.Object(obj.Object); masked {
				obj = &unstructured.Unstructured{Object: m}
			}
		}
		if p.o.JSON {
			if i > 0 {
				c.data = append(c.data, ',')
			}
			if c.data, err = encode.AppendJSON(c.data, obj.Object); err != nil {
				return chunk{}, err
			}
			continue
		}
		if i > 0 {
			c.data = append(c.data, "---\n"...)
		}
		if c.data, err = encode.AppendYAML(c.data, obj.Object); err != nil {
			return chunk{}, err
		}
	}
	return c, nil
}

// flush writes one cluster, in one write: its chunks in order.
func (p *Printer) flush(c *fleet.Cluster, chunks []chunk) error {
	n := 0
	for _, ch := range chunks {
		n += ch.objects
	}
	if p.o.Dir != "" {
		return p.writeDir(c, chunks, n)
	}
	var b []byte
	if p.o.JSON {
		// As json.Encoder writes a RenderedCluster.
		b = append(b, `{"type":"render","cluster":`...)
		b = appendJSON(b, c.Name)
		b = append(b, `,"group":`...)
		b = appendJSON(b, c.Group)
		b = append(b, `,"objects":[`...)
		first := true
		for _, ch := range chunks {
			if ch.objects == 0 {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			b, first = append(b, ch.data...), false
		}
		b = append(b, "]}\n"...)
	} else {
		if n == 0 {
			// A comment only: an empty document would parse as null.
			b = fmt.Appendf(b, "# Cluster: %s (no objects)\n", c.Name)
		}
		first := true
		for _, ch := range chunks {
			if ch.objects == 0 {
				continue
			}
			if p.documents > 0 {
				b = append(b, "---\n"...)
			}
			if first {
				b = fmt.Appendf(b, "# Cluster: %s\n", c.Name)
				first = false
			}
			b = append(b, ch.data...)
			p.documents += ch.objects
		}
	}
	_, err := p.o.Out.Write(b)
	return err
}

// stopped ends a YAML stream that stops before a cluster with a comment
// saying so, for whoever reads the stream from a file.
func (p *Printer) stopped(cluster string) {
	if p.o.Dir == "" && !p.o.JSON {
		fmt.Fprintf(p.o.Out, "# Rendering failed: the output stops before cluster %s.\n", cluster)
	}
}

func appendJSON(b []byte, s string) []byte {
	j, _ := json.Marshal(s)
	return append(b, j...)
}
