package herder_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/daemon/connect"
	_ "github.com/kcd-project/kcd/daemon/connectors/file" // FileStreamSource, FileStreamSink
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/herder"
	"github.com/kcd-project/kcd/daemon/herder/herdertest"
)

// confinedHerder is a herder whose file connectors are confined to a
// fresh directory allowed/, next to which lies outside/.
func confinedHerder(t *testing.T) (h *herder.Herder, s *connectstore.Store, allowed, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed, outside = filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	files, err := connect.NewFiles([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	s = herdertest.Store(t)
	return herder.New(s, herder.Options{Files: files, Logger: slog.New(slog.DiscardHandler)}), s, allowed, outside
}

// fileErrors returns the errors validation shows on the file setting, and
// the total.
func fileErrors(t *testing.T, h *herder.Herder, class string, c herder.Config) ([]string, int) {
	t.Helper()
	infos, err := h.ValidateConfig(class, c)
	if err != nil {
		t.Fatal(err)
	}
	v := values(infos)["file"]
	if v == nil {
		t.Fatalf("validate of %s lists no file setting: %v", class, names(infos))
	}
	return v.Errors, infos.ErrorCount
}

// With --file-connector-dirs, validate reports a FileStream file outside
// the allowed directories on the file setting, naming them; create, put
// and patch of the config refuse it (400) and store nothing.
func TestConfinedFileConnectorsValidateAndWrite(t *testing.T) {
	ctx := context.Background()
	h, s, allowed, outside := confinedHerder(t)
	for _, c := range []struct {
		file   *string
		ok     bool
		reason string
	}{
		{file: ptr(allowed + "/out.txt"), ok: true},
		{file: ptr(allowed + "/new/dir/out.txt"), ok: true},
		{file: ptr(outside + "/out.txt")},
		{file: ptr("/etc/kcd-test-out.txt")},
		{file: ptr(allowed + "/../outside/out.txt")},
		{file: ptr(allowed + "/link/out.txt"), reason: "symbolic link"},
		{file: ptr("out.txt"), reason: "not absolute"},
		{file: ptr(""), reason: "standard input or output"},
		{file: nil, reason: "standard input or output"}, // no file setting: stdout
	} {
		for _, class := range []string{"FileStreamSink", "FileStreamSource"} {
			name := "c-" + strings.ToLower(class)
			config := cfg("name", name, "connector.class", class, "topics", "t")
			if class == "FileStreamSource" {
				config = cfg("name", name, "connector.class", class, "topic", "t")
			}
			if c.file != nil {
				config["file"] = c.file
			}
			what := class + " file=<none>"
			if c.file != nil {
				what = class + " file=" + *c.file
			}
			errs, total := fileErrors(t, h, class, config)
			if c.ok {
				if total != 0 {
					t.Errorf("%s: %d errors: %v", what, total, errs)
				}
				continue
			}
			if len(errs) != 1 || total != 1 || !strings.Contains(errs[0], allowed) || !strings.Contains(errs[0], c.reason) ||
				!strings.Contains(errs[0], "for configuration file: ") {
				t.Errorf("%s: errors %v (of %d): want one on file naming %s and saying %q", what, errs, total, allowed, c.reason)
			}

			before := revision(t, s)
			_, err := h.CreateConnector(ctx, name, config, connectstore.TargetStarted)
			if !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), "Connector configuration is invalid and contains the following 1 error(s):\n"+errs[0]) {
				t.Errorf("%s: create: %v", what, err)
			}
			if _, _, err := h.PutConfig(ctx, name, config); !errors.Is(err, herder.ErrBadRequest) {
				t.Errorf("%s: put config: %v", what, err)
			}
			if after := revision(t, s); after != before {
				t.Errorf("%s: a refused write changed the store", what)
			}
		}
	}

	// An allowed connector cannot be patched out of the allowed directories.
	good := cfg("name", "good", "connector.class", "FileStreamSink", "topics", "t", "file", allowed+"/out.txt")
	if _, err := h.CreateConnector(ctx, "good", good, connectstore.TargetStarted); err != nil {
		t.Fatal(err)
	}
	if _, err := h.PatchConfig(ctx, "good", cfg("file", outside+"/out.txt")); !errors.Is(err, herder.ErrBadRequest) || !strings.Contains(err.Error(), allowed) {
		t.Errorf("patch out: %v", err)
	}
	if _, err := h.PatchConfig(ctx, "good", herder.Config{"file": nil}); !errors.Is(err, herder.ErrBadRequest) {
		t.Errorf("patch to stdout: %v", err)
	}
	if got, _ := h.Config(ctx, "good"); got["file"] == nil || *got["file"] != allowed+"/out.txt" {
		t.Errorf("config after refused patches: %v", got)
	}
}

// Without --file-connector-dirs, any path is accepted, as in Kafka Connect.
func TestUnconfinedFileConnectorsAcceptAnyPath(t *testing.T) {
	h := herder.New(herdertest.Store(t), herder.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, file := range []string{"/etc/kcd-test-out.txt", "relative.txt", ""} {
		if errs, total := fileErrors(t, h, "FileStreamSink", cfg("name", "x", "connector.class", "FileStreamSink", "topics", "t", "file", file)); total != 0 {
			t.Errorf("file %q: %v", file, errs)
		}
	}
}
