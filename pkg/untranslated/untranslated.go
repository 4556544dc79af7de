// Package untranslated keeps kubectl's message catalogs unread: the
// kubectl packages kubectl fleet uses translate their help texts when
// they are initialized (i18n.T), which reads and parses every catalog
// kubectl ships, about 25 ms and 4 MB at every start of a plugin whose
// own texts are in English only. Imported for its init, which Go runs
// before any k8s.io package's that needs i18n: packages are initialized
// in import-path order once their dependencies are, and this one's only
// dependency is i18n itself.
package untranslated

import "k8s.io/kubectl/pkg/util/i18n"

// loaded is whether i18n asked for the catalogs and got none.
var loaded bool

func init() {
	// An error means a catalog was read already: nothing to spare then.
	_ = i18n.SetLoadTranslationsFunc(func() error {
		loaded = true
		return nil
	})
}
