package daemon

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/config"
)

// A node whose REST API other hosts can reach and whose file connectors
// are not confined says so at start, with the setting to use; on loopback,
// or confined, it does not. A confined node warns of a directory it lacks.
func TestFileConfinementWarnings(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		rest string
		dirs []string
		want string // "" no warning
	}{
		{"10.11.12.13:8083", nil, "--file-connector-dirs"},
		{":8083", nil, "--file-connector-dirs"},
		{"0.0.0.0:8083", nil, "--file-connector-dirs"},
		{"127.0.0.1:8083", nil, ""},
		{"localhost:8083", nil, ""},
		{"[::1]:8083", nil, ""},
		{"10.11.12.13:8083", []string{dir}, ""},
		{"127.0.0.1:8083", []string{dir, filepath.Join(dir, "missing")}, "not a directory on this node"},
	} {
		cfg := config.Default()
		cfg.RESTAddr, cfg.FileConnectorDirs = c.rest, c.dirs
		var logs bytes.Buffer
		n := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
		files, err := n.fileConfinement()
		if err != nil {
			t.Fatal(err)
		}
		if (files == nil) != (c.dirs == nil) {
			t.Errorf("%s %v: confinement %v", c.rest, c.dirs, files)
		}
		warned := strings.Contains(logs.String(), "level=WARN")
		if warned != (c.want != "") || !strings.Contains(logs.String(), c.want) {
			t.Errorf("rest-addr %s, dirs %v: logged %q, want a warning saying %q", c.rest, c.dirs, logs.String(), c.want)
		}
	}
}
