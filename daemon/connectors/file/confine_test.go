package file

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/connect"
)

// confinedCtx is a connector, source task and sink task context that
// offers a confinement, as the worker's do.
type confinedCtx struct {
	fakeCtx
	files *connect.Files
}

func (c confinedCtx) Files() *connect.Files                { return c.files }
func (c confinedCtx) RequestTaskReconfiguration()          {}
func (c confinedCtx) RaiseError(error)                     {}
func (c confinedCtx) Assignment() []connect.TopicPartition { return nil }
func (c confinedCtx) Logger() *slog.Logger                 { return slog.New(slog.DiscardHandler) }
func (c confinedCtx) OffsetReader() connect.OffsetReader   { return c.fakeCtx }

// confined makes allowed/ and outside/ (with a secret file) and a context
// confined to allowed/.
func confined(t *testing.T) (ctx confinedCtx, allowed, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed, outside = filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	for _, d := range []string{allowed, filepath.Join(allowed, "sub"), outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("kcd-canary-secret-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := connect.NewFiles([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	return confinedCtx{fakeCtx: fakeCtx{offsets: map[string]map[string]any{}}, files: files}, allowed, outside
}

// Under a confinement, both connectors' ValidateFiles, Start and their
// tasks' Start refuse a file outside the allowed directories, on the
// file setting and naming the directories; a file inside is accepted.
func TestConfinedFileSetting(t *testing.T) {
	ctx, allowed, outside := confined(t)
	if err := os.Symlink(outside, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file   string
		set    bool // false: no file setting (stdin, stdout)
		ok     bool
		reason string
	}{
		{file: allowed + "/data.txt", set: true, ok: true},
		{file: allowed + "/sub/../data.txt", set: true, ok: true},
		{file: outside + "/secret.txt", set: true},
		{file: "/etc/passwd", set: true},
		{file: allowed + "/../outside/secret.txt", set: true},
		{file: allowed + "/link/secret.txt", set: true, reason: "symbolic link"},
		{file: "data.txt", set: true, reason: "not absolute"},
		{file: "", set: true, reason: "standard input or output"},
		{set: false, reason: "standard input or output"},
	} {
		for _, kind := range []string{"source", "sink"} {
			cfg := map[string]string{TopicConfig: "t", "topics": "t"}
			if c.set {
				cfg[FileConfig] = c.file
			}
			var conn interface {
				connect.Connector
				connect.FileUser
			}
			var taskStart func() error
			if kind == "source" {
				conn = &SourceConnector{}
				task := &SourceTask{}
				taskStart = func() error { defer task.Stop(); return task.Start(ctx, cfg) }
			} else {
				conn = &SinkConnector{}
				task := &SinkTask{}
				taskStart = func() error { defer task.Stop(); return task.Start(ctx, cfg) }
			}
			errs := conn.ValidateFiles(ctx.files, cfg)
			startErr := conn.Start(ctx, cfg)
			taskErr := taskStart()
			if c.ok {
				if errs != nil || startErr != nil || taskErr != nil {
					t.Errorf("%s file %q: refused: %v, %v, %v", kind, c.file, errs, startErr, taskErr)
				}
				continue
			}
			if len(errs) != 1 || len(errs[FileConfig]) != 1 {
				t.Errorf("%s file %q: validation errors %v, want one on %s", kind, c.file, errs, FileConfig)
				continue
			}
			for what, msg := range map[string]string{"validate": errs[FileConfig][0], "connector start": errString(startErr), "task start": errString(taskErr)} {
				if !strings.Contains(msg, "Invalid value "+c.file+" for configuration file: ") || !strings.Contains(msg, allowed) || !strings.Contains(msg, c.reason) {
					t.Errorf("%s file %q, %s: %q: want the setting, the allowed directory and %q", kind, c.file, what, msg, c.reason)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "data.txt")); err == nil {
		t.Error("a file was created outside")
	}
	// Without a confinement, nothing is refused.
	for _, file := range []string{"/etc/passwd", "relative.txt", ""} {
		if errs := (&SinkConnector{}).ValidateFiles(nil, map[string]string{FileConfig: file}); errs != nil {
			t.Errorf("unconfined %q: %v", file, errs)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A source whose file appears only after its start, as a symlink out of
// the allowed directory, fails at its open and sends nothing of it.
func TestConfinedSourceRefusesALinkOutAtOpen(t *testing.T) {
	ctx, allowed, outside := confined(t)
	file := filepath.Join(allowed, "later.txt")
	task := &SourceTask{}
	if err := task.Start(ctx, map[string]string{FileConfig: file, TopicConfig: "t"}); err != nil {
		t.Fatal(err)
	}
	defer task.Stop()
	pctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if recs, err := task.Poll(pctx); err != nil || len(recs) != 0 {
		t.Fatalf("before the file exists: %v %v", recs, err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), file); err != nil {
		t.Fatal(err)
	}
	recs, err := task.Poll(t.Context())
	if !errors.Is(err, connect.ErrOutside) || len(recs) != 0 {
		t.Fatalf("poll through a link out: %v records, %v", len(recs), err)
	}
}

// A sink task writes inside the allowed directory, and its file may be a
// symlink to another allowed file.
func TestConfinedSinkWritesInside(t *testing.T) {
	ctx, allowed, _ := confined(t)
	file := filepath.Join(allowed, "out.txt")
	if err := os.Symlink(file, filepath.Join(allowed, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	task := &SinkTask{}
	if err := task.Start(ctx, map[string]string{FileConfig: filepath.Join(allowed, "alias.txt")}); err != nil {
		t.Fatal(err)
	}
	if err := task.Put([]*connect.SinkRecord{{Value: "a"}, {Value: "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := task.Stop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "a\nb\n" {
		t.Errorf("out.txt holds %q", b)
	}
}
