package connect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside marks a path that Files does not allow.
var ErrOutside = errors.New("outside the directories open to file connectors")

// Files confines the local files connectors open to a set of directories
// (kcd's --file-connector-dirs). A path is allowed when it is absolute and
// what it leads to, once its symlinks and ".." are resolved as the kernel
// resolves them, lies inside one of the directories (also resolved). A nil
// *Files allows any path, as Kafka Connect does.
//
// Check is what validation and a connector's start call; OpenFile checks
// again and opens through an os.Root of the directory, so that a symlink
// put in place between the check and the open cannot lead outside it.
type Files struct {
	dirs []string // absolute and clean, as configured
}

// NewFiles returns the confinement to dirs, which must be absolute; no
// dirs returns nil: no confinement. The directories need not exist yet.
func NewFiles(dirs []string) (*Files, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	f := &Files{}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("file connector directory %q is not an absolute path", d)
		}
		f.dirs = append(f.dirs, filepath.Clean(d))
	}
	return f, nil
}

// Dirs returns the directories, as configured; nil when nothing is
// confined.
func (f *Files) Dirs() []string {
	if f == nil {
		return nil
	}
	return append([]string(nil), f.dirs...)
}

// String lists the directories for messages.
func (f *Files) String() string { return strings.Join(f.Dirs(), ", ") }

// Check tells whether path may be opened. A path that does not exist yet
// is judged by the directory it would be created in.
func (f *Files) Check(path string) error {
	_, _, err := f.locate(path)
	return err
}

// OpenFile opens path as os.OpenFile does, if Check allows it, through an
// os.Root of the allowed directory it lies in.
func (f *Files) OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if f == nil {
		return os.OpenFile(path, flag, perm)
	}
	dir, rel, err := f.locate(path)
	if err != nil {
		return nil, err
	}
	return openIn(path, dir, rel, flag, perm)
}

// openIn opens rel, the resolved form of path, inside dir. os.Root
// refuses what leads out of dir: a symlink put in place since locate
// resolved the path.
func openIn(path, dir, rel string, flag int, perm os.FileMode) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer root.Close()
	file, err := root.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, fmt.Errorf("open %s (in %s): %w", path, dir, err)
	}
	return file, nil
}

// locate resolves path and returns the allowed directory it lies in
// (resolved) and its name relative to that directory.
func (f *Files) locate(path string) (dir, rel string, err error) {
	if f == nil {
		return "", path, nil
	}
	if !filepath.IsAbs(path) {
		return "", "", fmt.Errorf("%w (file-connector-dirs: %s): the path is not absolute", ErrOutside, f)
	}
	real, err := resolve(path, 0)
	if err != nil {
		return "", "", fmt.Errorf("%w (file-connector-dirs: %s): cannot resolve the path: %v", ErrOutside, f, err)
	}
	lexical := false
	for _, d := range f.dirs {
		_, in := inside(filepath.Clean(path), d)
		lexical = lexical || in
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			rd = d // not there (yet): only paths through it, also not there, match
		}
		if r, ok := inside(real, rd); ok {
			return rd, r, nil
		}
	}
	if lexical {
		return "", "", fmt.Errorf("%w (file-connector-dirs: %s): the path leads outside through a symbolic link", ErrOutside, f)
	}
	return "", "", fmt.Errorf("%w (file-connector-dirs: %s)", ErrOutside, f)
}

// inside returns p relative to dir when p lies inside dir (not dir
// itself); both are absolute and clean.
func inside(p, dir string) (string, bool) {
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	r, ok := strings.CutPrefix(p, dir)
	return r, ok && r != ""
}

// maxSteps bounds the symlinks resolve follows and the missing
// components it keeps, as the kernel's ELOOP bounds links: a request
// cannot make it work without end.
const maxSteps = 40

// resolve returns the absolute path p leads to, with every symlink and
// ".." resolved in order as the kernel does. Components that do not exist
// yet are kept as written (a file about to be created); a dangling
// symlink leads to its target. A ".." after a missing component is an
// error, as it is for the kernel.
func resolve(p string, steps int) (string, error) {
	if steps > maxSteps {
		return "", errors.New("too many symbolic links or missing directories")
	}
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	i := strings.LastIndexByte(p, filepath.Separator)
	dir, base := p[:i], p[i+1:]
	if dir == "" {
		dir = string(filepath.Separator)
	}
	if base == "" || base == "." || base == ".." {
		return "", err
	}
	rdir, err := resolve(dir, steps+1)
	if err != nil {
		return "", err
	}
	full := filepath.Join(rdir, base)
	if target, lerr := os.Readlink(full); lerr == nil {
		// A dangling symlink: opening it with O_CREATE creates its target.
		if !filepath.IsAbs(target) {
			target = rdir + string(filepath.Separator) + target
		}
		return resolve(target, steps+1)
	}
	return full, nil
}

// FilesOf returns the confinement the runtime gives a connector or task
// through its context; nil (no confinement) when ctx offers none.
func FilesOf(ctx any) *Files {
	if c, ok := ctx.(interface{ Files() *Files }); ok {
		return c.Files()
	}
	return nil
}

// FileUser is implemented by connectors that open local files their
// config names. ValidateFiles reports, by setting, what files does not
// allow; validation (validate, create, config updates) shows it as it
// shows other invalid values. The connector checks again at its start
// and its tasks' (FilesOf), since a config can reach the store without
// validation (an import).
type FileUser interface {
	ValidateFiles(files *Files, config map[string]string) map[string][]string
}
