package fleet

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Pin is the identity recorded for a cluster.
type Pin struct {
	Server string
	UID    string
}

// WritePins returns the fleet file content with the server and uid of the
// named clusters set, keeping its comments and order as far as yaml.v3
// round-trips them (indentation becomes two spaces). New fields go right
// after the cluster's context.
func WritePins(data []byte, pins map[string]Pin) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not a fleet file")
	}
	clusters := mappingValue(doc.Content[0], "clusters")
	if clusters == nil || clusters.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no clusters list")
	}
	done := 0
	for _, c := range clusters.Content {
		name := mappingValue(c, "name")
		if name == nil {
			continue
		}
		pin, ok := pins[name.Value]
		if !ok {
			continue
		}
		setAfter(c, "uid", pin.UID, "context")
		setAfter(c, "server", pin.Server, "context")
		done++
	}
	if done != len(pins) {
		return nil, fmt.Errorf("%d of %d clusters found in the file", done, len(pins))
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setAfter sets key to value in mapping m, in place if the key exists, else
// inserted right after the key after (or at the end).
func setAfter(m *yaml.Node, key, value, after string) {
	if v := mappingValue(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, "!!str", value, 0
		return
	}
	at := len(m.Content)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == after {
			at = i + 2
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	m.Content = append(m.Content[:at], append([]*yaml.Node{k, v}, m.Content[at:]...)...)
}

// Repin sets pins in the fleet file at path (WritePins) and, when write
// and the content changed, replaces the file with the new content, with
// its mode, through a temporary file beside it. It returns the content
// before and after.
func Repin(path string, pins map[string]Pin, write bool) (before, after []byte, err error) {
	before, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if after, err = WritePins(before, pins); err != nil {
		return nil, nil, fmt.Errorf("pinning %s: %w", path, err)
	}
	if !write || bytes.Equal(before, after) {
		return before, after, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, after, info.Mode().Perm()); err != nil {
		return nil, nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return nil, nil, err
	}
	return before, after, nil
}
