package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTransform resolves any config value with the file, env and directory
// providers confined to one directory, a protected directory (the node's
// own secrets) inside it and reached by a symbolic link too, and kcd's
// KCD_* variables set: what is protected, outside or KCD_* never comes
// out, no error shows a resolved value, and a value without references
// stays as written. In the value, @A is the allowed directory, @P the
// protected one, @L a link to it, @O one outside.
func FuzzTransform(f *testing.F) {
	const (
		allowedVal   = "kcd-canary-secret-allowed"
		envVal       = "kcd-canary-secret-env"
		protectedVal = "kcd-canary-secret-protected"
		kcdVal       = "kcd-canary-secret-kcd-env"
		outsideVal   = "kcd-canary-secret-outside"
	)
	base := f.TempDir()
	dirs := map[string]string{"@A": filepath.Join(base, "allowed"), "@O": filepath.Join(base, "outside")}
	dirs["@P"] = filepath.Join(dirs["@A"], "data")
	dirs["@L"] = filepath.Join(dirs["@A"], "link")
	for dir, val := range map[string]string{dirs["@A"]: allowedVal, dirs["@P"]: protectedVal, dirs["@O"]: outsideVal} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			f.Fatal(err)
		}
		for name, body := range map[string]string{"p.properties": "pw=" + val + "\n", "pw": val} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				f.Fatal(err)
			}
		}
	}
	if err := os.Symlink(dirs["@P"], dirs["@L"]); err != nil {
		f.Fatal(err)
	}
	os.Setenv("KCD_FUZZ_SECRET_FOR_TRANSFORM", kcdVal)
	os.Setenv("FUZZ_SECRET_FOR_TRANSFORM", envVal)
	ps, err := NewProviders([]string{FileProvider, EnvProvider, DirectoryProvider}, []string{dirs["@A"]})
	if err != nil {
		f.Fatal(err)
	}
	ps.Protect(dirs["@P"])
	// The harness resolves what it may: else the properties hold trivially.
	for ref, want := range map[string]string{
		"${file:" + dirs["@A"] + "/p.properties:pw}": allowedVal, "${directory:" + dirs["@A"] + ":pw}": allowedVal,
		"${env:FUZZ_SECRET_FOR_TRANSFORM}": envVal,
	} {
		if out, err := ps.Transform(map[string]string{"x": ref}); err != nil || out["x"] != want {
			f.Fatalf("%s resolves to %q, %v", ref, out["x"], err)
		}
	}
	for _, s := range []string{
		"${file:@A/p.properties:pw}", "${env:FUZZ_SECRET_FOR_TRANSFORM}", "${directory:@A:pw}",
		"${file:@P/p.properties:pw}", "${directory:@L:pw}", "${file:@L/../data/p.properties:pw}", "${file:@A/../outside/p.properties:pw}",
		"${env:KCD_FUZZ_SECRET_FOR_TRANSFORM}", "${env:kcd_fuzz_secret_for_transform}", "${directory:@A/data:pw}",
		"u:${env:FUZZ_SECRET_FOR_TRANSFORM}@h ${vault:x:y} ${file:@A/p.properties:nope}", "$${env:X}", "${env:}", "${:}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for tok, dir := range dirs {
			v = strings.ReplaceAll(v, tok, dir)
		}
		out, err := ps.Transform(map[string]string{"x": v, "topic": "t"})
		shown := out["x"]
		var msg string
		if err != nil {
			msg = err.Error()
		}
		for _, secret := range []string{protectedVal, kcdVal, outsideVal} {
			if !strings.Contains(v, secret) && (strings.Contains(shown, secret) || strings.Contains(msg, secret)) {
				t.Fatalf("%q resolves to %q (%v): read what it must not", v, shown, err)
			}
		}
		for _, secret := range []string{allowedVal, envVal} {
			if !strings.Contains(v, secret) && strings.Contains(msg, secret) {
				t.Fatalf("%q: the error shows a resolved value: %v", v, err)
			}
		}
		if err == nil && !HasReference(v) && shown != v {
			t.Fatalf("%q, without a reference, resolves to %q", v, shown)
		}
	})
}
