package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Page is one Markdown file of the documentation.
type Page struct {
	// Path is the file's path relative to the repository root, with
	// slashes.
	Path  string
	Lines []string
}

// Pages reads README.md and every Markdown file under docs/ of the
// repository at root.
func Pages(root string) ([]Page, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var pages []Page
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{Path: f, Lines: strings.Split(string(b), "\n")})
	}
	return pages, nil
}

// fence reports whether line opens or closes a fenced code block.
func fence(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, " "), "```")
}

// Anchors returns the anchors GitHub gives the page's headings (outside
// code blocks), a repeated slug numbered -1, -2, … as GitHub numbers it.
func (p Page) Anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, l := range p.Lines {
		if fence(l) {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimLeft(l, "#")
		if text == "" || text[0] != ' ' {
			continue
		}
		s := Slug(text)
		if n := seen[s]; n > 0 {
			out[s+"-"+itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

var (
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// Slug is the anchor GitHub gives a heading: the text without Markdown
// (links keep their text, code spans their content), lower case, every
// character but letters, digits, spaces, '-' and '_' dropped, spaces
// turned into '-'.
func Slug(heading string) string {
	s := mdLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Link is a link of a page to a target in the repository.
type Link struct {
	Line   int // 1-based
	Target string
}

var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Links returns the page's relative links (outside code blocks and code
// spans): not http(s), not mailto.
func (p Page) Links() []Link {
	var out []Link
	inCode := false
	for i, l := range p.Lines {
		if fence(l) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range linkTarget.FindAllStringSubmatch(l, -1) {
			t := m[1]
			if strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, Link{Line: i + 1, Target: t})
		}
	}
	return out
}

// Example is a fenced block that shows commands and their output.
type Example struct {
	Page string
	Line int // 1-based, the opening fence
	// Marker is the HTML comment on the line before the block, without
	// "<!--" and "-->", or "" when there is none.
	Marker string
	// Body is the block's lines, fences excluded.
	Body []string
}

// Examples returns the page's fenced blocks whose first line is a
// "$ kubectl fleet" command, and every block right after a
// "<!-- check: ... -->" marker.
func (p Page) Examples() []Example {
	var out []Example
	for i := 0; i < len(p.Lines); i++ {
		if !fence(p.Lines[i]) {
			continue
		}
		start := i
		var body []string
		for i++; i < len(p.Lines) && !fence(p.Lines[i]); i++ {
			body = append(body, p.Lines[i])
		}
		marker := ""
		if start > 0 {
			prev := strings.TrimSpace(p.Lines[start-1])
			if strings.HasPrefix(prev, "<!--") && strings.HasSuffix(prev, "-->") {
				marker = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, "<!--"), "-->"))
			}
		}
		if strings.HasPrefix(marker, "check:") || (len(body) > 0 && strings.HasPrefix(body[0], "$ kubectl fleet")) {
			out = append(out, Example{Page: p.Path, Line: start + 1, Marker: marker, Body: body})
		}
	}
	return out
}
