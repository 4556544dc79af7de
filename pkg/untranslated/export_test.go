package untranslated

// Loaded is loaded, for the test of the init order.
func Loaded() bool { return loaded }
