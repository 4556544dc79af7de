package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"
	"gopkg.in/yaml.v3"
)

// EnvVar names the environment variable that points at the fleet file when
// --fleet is not given.
const EnvVar = "KUBECTL_FLEET"

// DefaultFile is the fleet file looked for in the working folder.
const DefaultFile = "fleet.yaml"

// Locate returns the fleet file to read: flag, else $KUBECTL_FLEET, else
// ./fleet.yaml.
func Locate(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv(EnvVar); env != "" {
		return env
	}
	return DefaultFile
}

// Load reads, decodes and validates the fleet file at path. Every problem is
// reported, each naming the file, line and field, as an ErrorList.
func Load(path string) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fleet file %s not found (use --fleet/-F or $%s)", path, EnvVar)
		}
		return nil, fmt.Errorf("reading fleet file: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, filepath.Dir(abs))
}

// Parse decodes and validates a fleet file's content. name is how errors
// refer to the file; dir is the folder relative paths resolve from.
func Parse(data []byte, name, dir string) (*Fleet, error) {
	e := &errs{file: name, pos: map[string]int{"": 1}, names: map[string]string{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			e.add("", "the file is empty")
			return nil, e.err()
		}
		return nil, syntaxError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		e.list = append(e.list, &FieldError{File: name, Line: extra.Line, Msg: "a fleet file holds one YAML document, found more"})
		return nil, e.err()
	}
	f := &Fleet{Path: name, Dir: dir}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	(&decoder{errs: e, named: map[string]bool{}}).decode(root, reflect.ValueOf(f).Elem(), "")
	f.positions, f.names = e.pos, e.names
	f.validate(e)
	if err := e.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// syntaxError turns yaml.v3's "yaml: line 3: ..." into "file:3: ...".
// yaml.v3 gives the line where the block around the problem starts (a
// mis-indented key on line 16 is said at line 9, where its list
// begins); yaml.v2's parser gives the problem's own, so it is asked
// for that line, and the block's is said after the message.
func syntaxError(name string, data []byte, err error) error {
	msg := cleanYAMLError(err)
	var line int
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n != 1 {
		return ErrorList{{File: name, Msg: "invalid YAML: " + msg}}
	}
	_, rest, _ := strings.Cut(msg, ":")
	if at := problemLine(data); at > line {
		rest += fmt.Sprintf(" (in the block that starts at line %d)", line)
		line = at
	}
	return ErrorList{{File: name, Line: line, Msg: "invalid YAML:" + rest}}
}

// problemLine is the line of a YAML syntax error by yaml.v2, 0 when it
// finds none. Its parser's lines count from 0, its scanner's from 1.
func problemLine(data []byte) int {
	var v any
	err := yaml2.Unmarshal(data, &v)
	if err == nil {
		return 0
	}
	var line int
	if n, _ := fmt.Sscanf(cleanYAMLError(err), "line %d:", &line); n != 1 {
		return 0
	}
	if strings.Contains(err.Error(), "did not find expected") {
		line++ // a parser's error
	}
	return line
}

// Line returns the line of a field path such as "clusters[2].context", or of
// its nearest enclosing field.
func (f *Fleet) Line(field string) int {
	return lineOf(f.positions, field)
}

// FieldError builds an error about field, positioned in the fleet file.
func (f *Fleet) FieldError(field, format string, args ...any) *FieldError {
	return &FieldError{File: f.Path, Line: f.Line(field), Field: field, Subject: subject(f.names, field), Msg: fmt.Sprintf(format, args...)}
}

// Group returns the group named name, or nil.
func (f *Fleet) Group(name string) *Group {
	for i := range f.Groups {
		if f.Groups[i].Name == name {
			return &f.Groups[i]
		}
	}
	return nil
}

// Cluster returns the cluster named name, or nil.
func (f *Fleet) Cluster(name string) *Cluster {
	for i := range f.Clusters {
		if f.Clusters[i].Name == name {
			return &f.Clusters[i]
		}
	}
	return nil
}

// Index lists the clusters' names and maps names to clusters: what a
// loop over clusters by name (runner.Run) looks them up in, rather than
// scanning the fleet (Cluster) once per cluster.
func Index(clusters []*Cluster) ([]string, map[string]*Cluster) {
	names := make([]string, len(clusters))
	byName := make(map[string]*Cluster, len(clusters))
	for i, c := range clusters {
		names[i], byName[c.Name] = c.Name, c
	}
	return names, byName
}

// App returns the app named name, or nil.
func (f *Fleet) App(name string) *App {
	for i := range f.Apps {
		if f.Apps[i].Name == name {
			return &f.Apps[i]
		}
	}
	return nil
}

// ResolvePath makes a path from the fleet file absolute: "~" expands to the
// home folder and relative paths resolve from the fleet file's folder.
func (f *Fleet) ResolvePath(p string) string {
	if p == "" {
		return ""
	}
	p = ExpandHome(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(f.Dir, p)
}

// ExpandHome replaces a leading "~" with the user's home folder.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}
