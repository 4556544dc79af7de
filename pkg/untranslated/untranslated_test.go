package untranslated_test

import (
	"testing"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/untranslated"
	// Translates its help texts when initialized: after untranslated.
	_ "k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/util/i18n"
)

func TestCatalogsNotRead(t *testing.T) {
	if !untranslated.Loaded() {
		t.Fatal("kubectl's packages read its message catalogs before untranslated's init could keep them unread")
	}
	const text = "Apply a configuration to a resource by file name or stdin"
	if got := i18n.T(text); got != text {
		t.Errorf("i18n.T(%q) = %q, want the text itself", text, got)
	}
}
