package connect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confinedDirs makes allowed/ (with a file in it) and outside/ (with a
// secret) under a temporary directory, and a Files confined to allowed.
func confinedDirs(t *testing.T) (files *Files, allowed, outside string) {
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
	write(t, filepath.Join(allowed, "in.txt"), "inside\n")
	write(t, filepath.Join(outside, "secret.txt"), "kcd-canary-secret-file\n")
	files, err = NewFiles([]string{allowed + "/"})
	if err != nil {
		t.Fatal(err)
	}
	return files, allowed, outside
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestFilesCheck(t *testing.T) {
	files, allowed, outside := confinedDirs(t)
	symlink(t, outside, filepath.Join(allowed, "to-outside"))                         // a directory link out
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(allowed, "s.txt")) // a file link out
	symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(allowed, "dangling")) // O_CREATE would create it outside
	symlink(t, "../outside/secret.txt", filepath.Join(allowed, "rel-out"))            // relative link out
	symlink(t, filepath.Join(allowed, "in.txt"), filepath.Join(allowed, "abs-in"))    // absolute link, inside
	symlink(t, "sub/../in.txt", filepath.Join(allowed, "rel-in"))                     // relative link, inside
	symlink(t, allowed, filepath.Join(outside, "to-allowed"))                         // a way in from outside
	symlink(t, filepath.Join(allowed, "loop"), filepath.Join(allowed, "loop"))        // a loop

	for _, c := range []struct {
		path string
		ok   bool
		why  string
	}{
		{allowed + "/in.txt", true, ""},
		{allowed + "/new.txt", true, ""},                // created later: judged by its directory
		{allowed + "/sub/missing/new.txt", true, ""},    // missing directories stay as written
		{allowed + "/sub/../in.txt", true, ""},          // .. that stays inside
		{allowed + "/abs-in", true, ""},                 // a link to an allowed file
		{allowed + "/rel-in", true, ""},                 // its relative form
		{outside + "/to-allowed/in.txt", true, ""},      // what matters is where it leads
		{outside + "/secret.txt", false, ""},            // plainly outside
		{"/etc/passwd", false, ""},                      // plainly outside
		{allowed + "/../outside/secret.txt", false, ""}, // .. out
		{allowed + "/sub/../../outside/x", false, ""},   // .. out, to a file not there
		{allowed + "/to-outside/secret.txt", false, "symbolic link"},
		{allowed + "/to-outside/new.txt", false, "symbolic link"},
		{allowed + "/s.txt", false, "symbolic link"},
		{allowed + "/dangling", false, "symbolic link"},
		{allowed + "/rel-out", false, "symbolic link"},
		{allowed + "/to-outside/../outside/secret.txt", false, "symbolic link"}, // .. after a link: the target's parent, as for the kernel
		{allowed + "/to-outside/../allowed/in.txt", true, ""},                   // the same way back in
		{allowed + "/missing/../in.txt", false, "cannot resolve"},
		{allowed + "/loop", false, "cannot resolve"},
		{allowed, false, ""},              // the directory itself is no file
		{allowed + "/", false, ""},        // nor with a slash
		{"in.txt", false, "not absolute"}, // relative to whatever the process's directory is
		{"allowed/in.txt", false, "not absolute"},
		{"", false, "not absolute"},
	} {
		err := files.Check(c.path)
		if c.ok != (err == nil) {
			t.Errorf("Check(%q): %v, want allowed=%v", c.path, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), allowed) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("Check(%q): %q: want ErrOutside naming %s and saying %q", c.path, err, allowed, c.why)
		}
		if strings.Contains(err.Error(), outside) {
			t.Errorf("Check(%q): %q tells where the path leads", c.path, err)
		}
	}

	var none *Files
	if err := none.Check("/etc/passwd"); err != nil {
		t.Errorf("no confinement refuses %v", err)
	}
	if err := none.Check("relative"); err != nil {
		t.Errorf("no confinement refuses %v", err)
	}
}

// An allowed directory given through a symlink allows what lies in its
// target, by either name.
func TestFilesDirThroughSymlink(t *testing.T) {
	_, allowed, outside := confinedDirs(t)
	link := filepath.Join(filepath.Dir(allowed), "link-to-allowed")
	symlink(t, allowed, link)
	files, err := NewFiles([]string{link})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link + "/in.txt", allowed + "/in.txt", link + "/new.txt"} {
		if err := files.Check(p); err != nil {
			t.Errorf("Check(%q): %v", p, err)
		}
	}
	if err := files.Check(outside + "/secret.txt"); err == nil {
		t.Error("a file outside is allowed")
	}
	f, err := files.OpenFile(link+"/in.txt", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestNewFiles(t *testing.T) {
	if f, err := NewFiles(nil); f != nil || err != nil {
		t.Errorf("no dirs: %v %v", f, err)
	}
	if _, err := NewFiles([]string{"/data", "data"}); err == nil {
		t.Error("a relative directory is accepted")
	}
	f, err := NewFiles([]string{"/data/in/", "/data/x/../out"})
	if err != nil || f.String() != "/data/in, /data/out" {
		t.Errorf("dirs %q, %v", f, err)
	}
}

// OpenFile opens what Check allows, creating a file that is not there;
// it refuses what Check refuses, and creates nothing outside.
func TestFilesOpenFile(t *testing.T) {
	files, allowed, outside := confinedDirs(t)
	symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(allowed, "dangling"))
	symlink(t, filepath.Join(allowed, "in.txt"), filepath.Join(allowed, "abs-in"))

	f, err := files.OpenFile(allowed+"/abs-in", os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open through an absolute link inside: %v", err)
	}
	f.Close()
	f, err = files.OpenFile(allowed+"/out.txt", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x\n")
	f.Close()
	if b, _ := os.ReadFile(allowed + "/out.txt"); string(b) != "x\n" {
		t.Errorf("out.txt holds %q", b)
	}
	if _, err := files.OpenFile(allowed+"/dangling", os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrOutside) {
		t.Errorf("open of a dangling link out: %v", err)
	}
	if _, err := os.Stat(outside + "/new.txt"); err == nil {
		t.Error("a file was created outside")
	}
	if _, err := files.OpenFile(outside+"/secret.txt", os.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
		t.Errorf("open outside: %v", err)
	}
}

// A directory that becomes a symlink out between the check of a path and
// its open does not lead the open outside: it goes through an os.Root.
func TestFilesOpenRefusesASymlinkSwappedIn(t *testing.T) {
	_, allowed, outside := confinedDirs(t)
	dir, rel, err := (&Files{dirs: []string{allowed}}).locate(allowed + "/sub/secret.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The swap, after the check.
	if err := os.Remove(allowed + "/sub"); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, allowed+"/sub")
	if f, err := openIn(allowed+"/sub/secret.txt", dir, rel, os.O_RDONLY, 0); err == nil {
		f.Close()
		t.Fatal("opened a file outside through a symlink swapped in after the check")
	}
	// And OpenFile, which checks again, names the reason.
	if _, err := (&Files{dirs: []string{allowed}}).OpenFile(allowed+"/sub/secret.txt", os.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
		t.Errorf("OpenFile after the swap: %v", err)
	}
}

func TestFilesOf(t *testing.T) {
	files := &Files{dirs: []string{"/x"}}
	if FilesOf(nil) != nil || FilesOf(struct{}{}) != nil {
		t.Error("a context without Files gives a confinement")
	}
	if FilesOf(filesCtx{files}) != files {
		t.Error("the context's Files is not returned")
	}
}

type filesCtx struct{ f *Files }

func (c filesCtx) Files() *Files { return c.f }
