package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
)

func sample() Report {
	return Report{Command: "diff", Clusters: []Cluster{
		{Name: "stg", Group: "staging", State: "differs", Counts: &Counts{Create: 1, Change: 1}, Diff: "--- live/stg/Secret/web/creds\n+++ merged/stg/Secret/web/creds\n@@ -1,3 +1,3 @@\n-  password: '*** (before)'\n+  password: '*** (after)'\n"},
		{Name: "prod|eu", Group: "production", State: "failed", Failed: true, Counts: &Counts{}, Error: "app web: forbidden\nsecond line", Apps: []App{{Name: "web", State: "failed", Failed: true, Error: "forbidden"}}},
		{Name: "prod-us", Group: "production", State: "skipped", Skipped: true, Error: "unreachable: dial tcp: refused"},
	}}
}

// parse reads markdown the way GitHub does (GFM tables) and returns the
// tables' rows and the raw HTML blocks.
func parse(t *testing.T, md string) (rows [][]string, html []string) {
	t.Helper()
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *east.TableRow, *east.TableHeader:
			var row []string
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				var b strings.Builder
				for x := c.FirstChild(); x != nil; x = x.NextSibling() {
					b.Write(nodeText(x, src))
				}
				row = append(row, b.String())
			}
			rows = append(rows, row)
		case *ast.HTMLBlock:
			var b bytes.Buffer
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			html = append(html, b.String())
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, html
}

func nodeText(n ast.Node, src []byte) []byte {
	if t, ok := n.(*ast.Text); ok {
		return t.Segment.Value(src)
	}
	var b bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.Write(nodeText(c, src))
	}
	return b.Bytes()
}

func TestMarkdownParses(t *testing.T) {
	var b bytes.Buffer
	if err := sample().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	rows, html := parse(t, b.String())
	want := [][]string{
		{"cluster", "group", "create", "change", "prune", "unchanged", "state"},
		{"stg", "staging", "1", "1", "0", "0", "differs"},
		{`prod\|eu`, "production", "0", "0", "0", "0", "failed"}, // as written; rendered below
		{"prod-us", "production", "0", "0", "0", "0", "skipped"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("table (-want +got):\n%s\n%s", diff, b.String())
	}
	var page bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(b.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<td>prod|eu</td>") || strings.Count(page.String(), "<tr>") != 4 {
		t.Errorf("rendered table:\n%s", page.String())
	}
	if len(html) < 3 || !strings.HasPrefix(html[0], "<details><summary>stg: differs</summary>") {
		t.Errorf("details blocks: %q", html)
	}
	for _, want := range []string{"```diff\n--- live/stg/Secret/web/creds", "+  password: '*** (after)'", "```text\napp web: forbidden\nsecond line\n```", "unreachable: dial tcp: refused"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMarkdownFitsAComment: long diffs are cut, every fence closed, every
// cluster keeps its block, and the whole fits.
func TestMarkdownFitsAComment(t *testing.T) {
	r := Report{Command: "apply"}
	for i := range 5 {
		diff := strings.Repeat(fmt.Sprintf("+  key-%d: value\n", i), 20000)
		r.Clusters = append(r.Clusters, Cluster{Name: fmt.Sprintf("c%d", i), Group: "g", State: "applied", Counts: &Counts{Create: 1}, Diff: diff})
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if len(md) > MaxMarkdown {
		t.Errorf("%d characters, more than %d", len(md), MaxMarkdown)
	}
	if n := strings.Count(md, "_Cut to fit a pull-request comment"); n != 5 {
		t.Errorf("%d notes, want 5", n)
	}
	if strings.Count(md, "```")%2 != 0 {
		t.Error("a code fence is left open")
	}
	_, html := parse(t, md)
	opened := 0
	for _, h := range html {
		opened += strings.Count(h, "<details>")
	}
	if opened != 5 || strings.Count(md, "</details>") != 5 {
		t.Errorf("%d details opened, %d closed", opened, strings.Count(md, "</details>"))
	}
}

// TestJUnit: one case per cluster and per app, failures and skips counted,
// and the attributes the usual schema (Jenkins' junit.xsd) requires.
func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := sample().WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Failures != 2 || got.Skipped != 1 || len(got.Suites) != 2 {
		t.Errorf("totals: %d tests, %d failures, %d skipped, %d suites\n%s", got.Tests, got.Failures, got.Skipped, len(got.Suites), b.String())
	}
	var cases []string
	for _, s := range got.Suites {
		if s.Name == "" || s.Tests != len(s.Cases) {
			t.Errorf("suite %+v", s)
		}
		for _, c := range s.Cases {
			state := "passed"
			switch {
			case c.Failure != nil:
				state = "failed: " + c.Failure.Message
			case c.Skipped != nil:
				state = "skipped: " + c.Skipped.Message
			}
			cases = append(cases, c.Classname+" "+c.Name+" "+state)
		}
	}
	want := []string{
		"staging stg passed",
		"production prod|eu failed: failed: app web: forbidden",
		"production.prod|eu prod|eu/web failed: failed: forbidden",
		"production prod-us skipped: skipped: unreachable: dial tcp: refused",
	}
	if diff := cmp.Diff(want, cases); diff != "" {
		t.Errorf("cases (-want +got):\n%s", diff)
	}
}

func TestWriteAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.md")
	for range 2 {
		if err := Write(sample(), Markdown, path, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "### kubectl fleet diff"); n != 2 {
		t.Errorf("%d reports appended, want 2", n)
	}
	if err := Write(sample(), JUnit, path, false, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte("<?xml")) {
		t.Errorf("not replaced: %s", b[:40])
	}
}

// A report masks the values the run decrypted, in every format: a
// pull-request comment is read by more people than the cluster's Secrets.
func TestWriteMasks(t *testing.T) {
	var m mask.Set
	m.Add("s3cr3t-token-84710293847561")
	rep := sample()
	rep.Clusters[1].Error = "app web: token s3cr3t-token-84710293847561 rejected"
	for _, format := range []string{Markdown, JUnit} {
		path := filepath.Join(t.TempDir(), "report")
		if err := Write(rep, format, path, false, &m); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("84710293847561")) || !bytes.Contains(b, []byte("token *** rejected")) {
			t.Errorf("%s report holds the value, or lost the message:\n%s", format, b)
		}
	}
}

// TestMarkdownCellsAreText: a string from a registry or a cluster (a
// pause's reason anyone with push rights writes) renders in the table as
// the text it is: no link, image, HTML, emphasis, mention or autolink,
// and no column of its own.
func TestMarkdownCellsAreText(t *testing.T) {
	hostile := "paused: [sign in](https://evil.example/x) ![](https://t.example/p.png) <img src=x onerror=alert(1)> **now** _it_ `code` ~~gone~~ @everyone #1 www.evil.example | forged \\| col\nline"
	r := Report{Command: "status", Clusters: []Cluster{{Name: "edge-1", Group: "late", State: hostile, Apps: []App{{Name: "web", State: hostile}}}}}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(b.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, tag := range []string{"<a ", "<img", "<strong>", "<em>", "<code>", "<del>", "<h1"} {
		if strings.Contains(html, tag) {
			t.Errorf("the cell renders %s:\n%s\nfrom\n%s", tag, html, b.String())
		}
	}
	flat := strings.ReplaceAll(hostile, "\n", " ")
	want := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(flat)
	if strings.Count(html, "<td>") != 4 || !strings.Contains(html, "<td>"+want+"</td>") {
		t.Errorf("the cell is not the text it was:\n%s\nwant <td>%s</td>", html, want)
	}
}

// Every measurement of a cluster's analyses is in the report: under the
// cluster in Markdown, in its test case's output in JUnit, taken from
// the collector.
func TestMeasurements(t *testing.T) {
	rc := NewCollector()
	rc.Measured("canary-eu", "analysis error-rate (1/2): 0.3 failed (result < 0.05)")
	rc.Measured("canary-eu", "analysis error-rate (2/2): 0.2 failed (result < 0.05)")
	r := Report{Command: "apply", Clusters: []Cluster{{Name: "canary-eu", Group: "production", State: "failed", Failed: true, Measurements: rc.MeasurementsOf("canary-eu")}, {Name: "prod-eu", Group: "production", State: "not started"}}}
	var md, junit strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Measurements:\n", "analysis error-rate (1/2): 0.3 failed (result < 0.05)\nanalysis error-rate (2/2): 0.2 failed (result < 0.05)\n"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(junit.String(), "analysis error-rate (2/2): 0.2 failed (result &lt; 0.05)") {
		t.Errorf("the JUnit lacks the measurement:\n%s", junit.String())
	}
	if got := rc.MeasurementsOf("prod-eu"); got != nil {
		t.Errorf("prod-eu measured %q", got)
	}
}
