// Package report writes what a command did on every cluster for CI: a
// markdown report that fits in a pull-request comment or a GitHub Actions
// job summary (one table, each cluster's diff folded in <details>), and a
// JUnit XML report for CI dashboards (one test case per cluster and per
// app). It never sees a Secret value: diffs reach it masked.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/mask"
)

// Formats.
const (
	Markdown = "markdown"
	JUnit    = "junit"
)

// MaxMarkdown bounds the markdown report: a GitHub comment holds 65,536
// characters. Diffs are cut to fit, with a note.
var MaxMarkdown = 60000

// Report is one command's outcome on every cluster.
type Report struct {
	// Command is what ran: "diff", "apply", "status", "rollback".
	Command  string
	Clusters []Cluster
}

// Cluster is one cluster's outcome.
type Cluster struct {
	Name, Group string
	// State is the outcome in a word or two: "differs", "in sync",
	// "applied", "failed", "skipped", "not started", "Current", ….
	State string
	// Failed marks a state that is a failure (a JUnit failure).
	Failed bool
	// Skipped marks a cluster not worked on (a JUnit skip).
	Skipped bool
	// Counts are create/change/prune/unchanged; nil leaves the columns
	// out (status).
	Counts *Counts
	// Apps are the apps' outcomes on the cluster.
	Apps []App
	// Diff is the cluster's diff, masked; "" when none was made.
	Diff string
	// Measurements are its analyses' measurements, as said.
	Measurements []string
	// Error is why it failed or was skipped.
	Error string
}

// Counts are what a diff or apply found per cluster.
type Counts struct {
	Create, Change, Prune, Unchanged int
}

// App is one app's outcome on a cluster.
type App struct {
	Name, State string
	Failed      bool
	Error       string
}

// Write writes r in format to path; with appendTo, it appends (a job
// summary), else it replaces the file; the values m holds are masked.
func Write(r Report, format, path string, appendTo bool, m *mask.Set) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// A report is read in a pull request and a job summary: the values
	// the run decrypted are masked in it as on standard output.
	w := m.Writer(f)
	switch format {
	case JUnit:
		err = r.WriteJUnit(w)
	default:
		err = r.WriteMarkdown(w)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}

// WriteMarkdown writes the markdown report: a heading, one table, and
// each cluster's diff and errors folded in <details>, cut to MaxMarkdown
// characters in all.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### kubectl fleet %s\n\n", r.Command)
	withCounts := false
	for _, c := range r.Clusters {
		withCounts = withCounts || c.Counts != nil
	}
	if withCounts {
		b.WriteString("| cluster | group | create | change | prune | unchanged | state |\n|---|---|---:|---:|---:|---:|---|\n")
	} else {
		b.WriteString("| cluster | group | apps | state |\n|---|---|---|---|\n")
	}
	for _, c := range r.Clusters {
		state := cell(c.State)
		if c.Failed {
			state = "**" + state + "**"
		}
		if withCounts {
			n := c.Counts
			if n == nil {
				n = &Counts{}
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %s |\n", cell(c.Name), cell(c.Group), n.Create, n.Change, n.Prune, n.Unchanged, state)
			continue
		}
		apps := make([]string, len(c.Apps))
		for i, a := range c.Apps {
			apps[i] = a.Name + ": " + a.State
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(c.Name), cell(c.Group), cell(strings.Join(apps, ", ")), state)
	}
	var details []string
	for _, c := range r.Clusters {
		var body strings.Builder
		if c.Error != "" {
			fmt.Fprintf(&body, "%s\n\n", fence(c.Error))
		}
		for _, a := range c.Apps {
			if a.Error != "" {
				fmt.Fprintf(&body, "%s:\n%s\n\n", a.Name, fence(a.Error))
			}
		}
		if len(c.Measurements) > 0 {
			fmt.Fprintf(&body, "Measurements:\n%s\n\n", fence(strings.Join(c.Measurements, "\n")))
		}
		if c.Diff != "" {
			fmt.Fprintf(&body, "%s\n", fenceAs("diff", c.Diff))
		}
		if body.Len() > 0 {
			details = append(details, fmt.Sprintf("<details><summary>%s</summary>\n\n%s</details>\n", htmlEscape(c.Name+": "+c.State), body.String()))
		}
	}
	out := b.String()
	if len(details) > 0 {
		out += "\n"
		budget := MaxMarkdown - len(out)
		for i, d := range details {
			// Each cluster's share of what is left, so that every cluster
			// shows something.
			share := budget / (len(details) - i)
			if len(d) > share {
				d = truncate(d, share)
			}
			budget -= len(d)
			out += d
		}
	}
	_, err := io.WriteString(w, out)
	return err
}

// truncate cuts a <details> block to about n characters, closing its
// fence and block, with a note.
func truncate(d string, n int) string {
	const note = "\n```\n\n_Cut to fit a pull-request comment: run the command for the whole diff._\n</details>\n"
	keep := max(0, n-len(note))
	if keep > len(d) {
		return d
	}
	cut := d[:keep]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	// Close an open code fence: count the fences kept.
	if strings.Count(cut, "```")%2 == 0 {
		cut += "\n```text"
	}
	return cut + note
}

// cell makes text safe in a table cell, as text: it may come from a
// registry or a cluster (a pause's reason, an error), which anyone with
// push rights writes. What markdown or HTML would make of it (a link,
// an image that calls a server, a mention, an issue reference, a
// heading, emphasis, an autolink) is escaped, and it stays one line.
func cell(s string) string { return cellEscapes.Replace(s) }

var cellEscapes = strings.NewReplacer(
	"\n", " ", "\r", " ",
	`\`, `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "!", `\!`, "~", `\~`, "#", `\#`, "@", `\@`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;",
	"://", `:\/\/`, "www.", `www\.`,
)

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func fence(s string) string { return fenceAs("text", s) }

// fenceAs puts s in a fenced code block of a language, with a fence longer
// than any run of backticks in s.
func fenceAs(lang, s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}

// JUnit's XML, as Jenkins, GitLab and GitHub test reporters read it.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *junitMessage `xml:"failure,omitempty"`
		Skipped   *junitMessage `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes one test suite per group, a test case per cluster and
// one per app on it: failures with the reason, skipped clusters skipped.
func (r Report) WriteJUnit(w io.Writer) error {
	all := junitSuites{Name: "kubectl fleet " + r.Command}
	var suites []*junitSuite
	byGroup := map[string]*junitSuite{}
	for _, c := range r.Clusters {
		s := byGroup[c.Group]
		if s == nil {
			s = &junitSuite{Name: "kubectl fleet " + r.Command + ": " + c.Group}
			byGroup[c.Group] = s
			suites = append(suites, s)
		}
		tc := junitCase{Name: c.Name, Classname: c.Group, SystemOut: strings.Join(append([]string{c.State}, c.Measurements...), "\n")}
		switch {
		case c.Skipped:
			tc.Skipped = &junitMessage{Message: c.State + ": " + c.Error}
		case c.Failed:
			tc.Failure = &junitMessage{Message: firstLine(c.State + ": " + c.Error), Type: c.State, Text: c.Error}
		}
		s.add(tc)
		for _, a := range c.Apps {
			ac := junitCase{Name: c.Name + "/" + a.Name, Classname: c.Group + "." + c.Name, SystemOut: a.State}
			switch {
			case c.Skipped:
				ac.Skipped = &junitMessage{Message: "cluster " + c.State}
			case a.Failed:
				ac.Failure = &junitMessage{Message: firstLine(a.State + ": " + a.Error), Type: a.State, Text: a.Error}
			}
			s.add(ac)
		}
	}
	for _, s := range suites {
		all.Suites = append(all.Suites, *s)
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Skipped != nil:
		s.Skipped++
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSuffix(s, ": "), "\n")
	return line
}
