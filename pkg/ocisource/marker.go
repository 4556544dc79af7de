package ocisource

import (
	"encoding/json"
	"os"
)

// marker is what the cache knows of an artifact unpacked beside it
// (<digest>.json): its format, and the keys its signature was verified
// with, by fingerprint, so that a verified artifact in the cache renders
// with no network.
type marker struct {
	Format string   `json:"format"`
	Keys   []string `json:"keys,omitempty"`
}

func readMarker(path string) (marker, bool) {
	var m marker
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &m) != nil || m.Format == "" {
		return marker{}, false
	}
	if _, err := os.Stat(path[:len(path)-len(".json")]); err != nil {
		return marker{}, false
	}
	return m, true
}

func writeMarker(path string, m marker) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
