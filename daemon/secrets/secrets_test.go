package secrets

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const canary = "kcd-canary-secret-7f3a9"

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTransformEachProvider(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "db.properties")
	writeFile(t, props, "# a comment\n! another\nuser = kcd\npassword="+canary+"\nurl: jdbc:mysql://db:3306/x\nmulti = a\\\n   b\nesc=tab\\there\\u0041\n")
	writeFile(t, filepath.Join(dir, "k8s", "token"), canary+"-dir\n")
	t.Setenv("SECRETS_TEST_VAR_OF_KCD", canary+"-env")

	p, err := NewProviders([]string{"file", "env", "directory"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]string{
		"connection.user":     "${file:" + props + ":user}",
		"connection.password": "${file:" + props + ":password}",
		"connection.url":      "${file:" + props + ":url}?ssl=true",
		"multi":               "${file:" + props + ":multi}",
		"esc":                 "${file:" + props + ":esc}",
		"api.token":           "${directory:" + filepath.Join(dir, "k8s") + ":token}",
		"from.env":            "pre-${env:SECRETS_TEST_VAR_OF_KCD}-post",
		"vault":               "${vault:secret/db:password}", // not configured: stays
		"plain":               "no reference",
	}
	got, err := p.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"connection.user":     "kcd",
		"connection.password": canary,
		"connection.url":      "jdbc:mysql://db:3306/x?ssl=true",
		"multi":               "ab",
		"esc":                 "tab\there" + "A",
		"api.token":           canary + "-dir\n", // the whole file, as Kafka Connect reads it
		"from.env":            "pre-" + canary + "-env-post",
		"vault":               "${vault:secret/db:password}",
		"plain":               "no reference",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Transform:\n got %q\nwant %q", got, want)
	}
	if raw["connection.password"] == canary {
		t.Fatal("Transform changed its input")
	}

	// Without providers, nothing is resolved.
	var none *Providers
	if got, err := none.Transform(raw); err != nil || !maps.Equal(got, raw) {
		t.Fatalf("nil providers: %v %v", got, err)
	}
}

func TestTransformErrorsNameTheReference(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "db.properties")
	writeFile(t, props, "password="+canary+"\n")
	p, err := NewProviders([]string{"file", "env", "directory"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		"${file:" + props + ":nokey}",
		"${file:" + filepath.Join(dir, "missing.properties") + ":password}",
		"${env:KCD_SECRETS_TEST_SURELY_UNSET}",
		"${directory:" + dir + ":nofile}",
		"${directory:" + dir + ":../etc}",
		"${env:x:y}", // env takes no path
	} {
		_, err := p.Transform(map[string]string{"connection.password": ref, "other": "${file:" + props + ":password}"})
		if err == nil {
			t.Errorf("%s: resolved", ref)
			continue
		}
		if !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), `"connection.password"`) {
			t.Errorf("%s: error does not name the setting and the reference: %v", ref, err)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("%s: error holds a secret value", ref)
		}
	}
}

func TestAllowedPaths(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	writeFile(t, filepath.Join(allowed, "db.properties"), "password="+canary+"\n")
	writeFile(t, filepath.Join(dir, "other", "db.properties"), "password="+canary+"\n")
	writeFile(t, filepath.Join(allowed, "secrets", "pw"), canary)
	if _, err := NewProviders([]string{"file"}, []string{"relative/path"}); err == nil {
		t.Fatal("a relative allowed path was accepted")
	}
	if _, err := NewProviders([]string{"vault"}, nil); err == nil {
		t.Fatal("an unknown provider was accepted")
	}
	p, err := NewProviders([]string{"file", "directory"}, []string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	for ref, ok := range map[string]bool{
		"${file:" + filepath.Join(allowed, "db.properties") + ":password}":                  true,
		"${directory:" + filepath.Join(allowed, "secrets") + ":pw}":                         true,
		"${file:" + filepath.Join(dir, "other", "db.properties") + ":password}":             false,
		"${file:" + allowed + "/../other/db.properties:password}":                           false,
		"${file:" + allowed + "-evil/db.properties:password}":                               false,
		"${directory:" + filepath.Join(dir, "other") + ":db.properties}":                    false,
		"${file:" + filepath.Join(allowed, "secrets", "..", "db.properties") + ":password}": true,
	} {
		got, err := p.Transform(map[string]string{"k": ref})
		switch {
		case ok && (err != nil || got["k"] != canary):
			t.Errorf("%s: %q %v, want the value", ref, got["k"], err)
		case !ok && err == nil:
			t.Errorf("%s: resolved outside the allowed paths", ref)
		case !ok && !strings.Contains(err.Error(), "allowed"):
			t.Errorf("%s: %v, want an error about allowed paths", ref, err)
		}
	}
}

func TestFileSizeBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.properties")
	writeFile(t, big, "k=v\n"+strings.Repeat("#", MaxFileSize))
	p, _ := NewProviders([]string{"file", "directory"}, nil)
	if _, err := p.Transform(map[string]string{"k": "${file:" + big + ":k}"}); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("a file over MaxFileSize: %v", err)
	}
	if _, err := p.Transform(map[string]string{"k": "${directory:" + dir + ":big.properties}"}); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("a directory file over MaxFileSize: %v", err)
	}
	if _, err := p.Transform(map[string]string{"k": "${file:" + dir + ":k}"}); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a directory as a properties file: %v", err)
	}
}

func TestReverseTransform(t *testing.T) {
	raw := map[string]string{
		"connection.password": "${file:/etc/kcd/db.properties:password}",
		"connection.url":      "jdbc:mysql://db/${env:DB_NAME}",
		"topic":               "plain",
		"not.in.tasks":        "${env:X}",
	}
	tasks := []map[string]string{
		{"connection.password": canary, "connection.url": "jdbc:mysql://db/prod", "topic": "plain", "task.id": "0"},
		{"task.id": "1"},
	}
	got := ReverseTransform(raw, tasks)
	want := []map[string]string{
		{"connection.password": raw["connection.password"], "connection.url": raw["connection.url"], "topic": "plain", "task.id": "0"},
		{"task.id": "1"},
	}
	for i := range want {
		if !maps.Equal(got[i], want[i]) {
			t.Errorf("task %d: %v, want %v", i, got[i], want[i])
		}
	}
	if tasks[0]["connection.password"] != canary {
		t.Error("ReverseTransform changed its input")
	}
}

func TestMasker(t *testing.T) {
	raw := map[string]string{
		"connection.password": "literal-" + canary,
		"db.url":              "jdbc:postgresql://db/x?user=kcd&password=${env:PW}",
		"file":                "${file:/etc/kcd/p:out}",
		"sasl.jaas.config":    "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"" + canary + "-jaas\";",
		"secret.ref":          "${env:PW}",
		"tasks.max":           "1",
		"short":               "${env:SHORT}",
		"custom.pass":         "typed-" + canary,
	}
	resolved := maps.Clone(raw)
	resolved["db.url"] = "jdbc:postgresql://db/x?user=kcd&password=" + canary + "-url"
	resolved["file"] = "/data/" + canary + "-path/out.txt"
	resolved["secret.ref"] = canary + "-url"
	resolved["short"] = "ab"
	m := NewMasker(func(k string) bool { return k == "custom.pass" }, raw, resolved)
	text := "failed: " + strings.Join([]string{resolved["connection.password"], resolved["db.url"], resolved["file"], resolved["sasl.jaas.config"], resolved["custom.pass"], "ab", "tasks.max=1"}, " | ")
	got := m.String(text)
	if strings.Contains(got, canary) {
		t.Fatalf("masked text still holds a secret: %s", got)
	}
	if !strings.Contains(got, Hidden) || !strings.Contains(got, "tasks.max=1") || !strings.Contains(got, "| ab |") {
		t.Fatalf("masked too much or too little: %s", got)
	}
	err := m.Error(&fs.PathError{Op: "open", Path: resolved["file"], Err: fs.ErrNotExist})
	if strings.Contains(err.Error(), canary) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("masked error: %v (still Is ErrNotExist: %v)", err, errors.Is(err, fs.ErrNotExist))
	}

	masked := MaskConfig(raw, func(k string) bool { return k == "custom.pass" })
	for _, k := range []string{"connection.password", "sasl.jaas.config", "custom.pass"} {
		if masked[k] != Hidden {
			t.Errorf("MaskConfig %s: %q", k, masked[k])
		}
	}
	if masked["secret.ref"] != "${env:PW}" || masked["tasks.max"] != "1" {
		t.Errorf("MaskConfig hid a reference or a plain value: %v", masked)
	}

	var nilM *Masker
	if nilM.String("x") != "x" || nilM.Error(nil) != nil {
		t.Error("nil Masker")
	}
}

func TestMaskingHandler(t *testing.T) {
	var buf bytes.Buffer
	var cur atomic.Pointer[Masker]
	log := slog.New(NewMaskingHandler(slog.NewTextHandler(&buf, nil), &cur))
	cur.Store(NewMasker(nil, map[string]string{"db.password": canary}))
	derived := log.With("pw", canary)
	derived.Info("connect with "+canary, "err", errors.New("auth "+canary+" refused"),
		"config", map[string]string{"db.password": canary, "x": "y"},
		"any", []string{canary}, slog.Group("g", "v", canary))
	// A later config's secrets are masked by loggers made before it.
	cur.Store(NewMasker(nil, map[string]string{"token": canary + "-2"}))
	derived.Warn("second", "v", canary+"-2")
	out := buf.String()
	if strings.Contains(out, canary) {
		t.Fatalf("log holds a secret:\n%s", out)
	}
	if strings.Count(out, Hidden) < 7 {
		t.Fatalf("expected every secret hidden:\n%s", out)
	}
}

func TestParseProperties(t *testing.T) {
	got := ParseProperties("a=1\n  b : 2\nc 3\nd\ne=\\\n  x\\\n  y\nf=g=h\n# k=no\n\\:k\\=\\ x=esc\n")
	want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "", "e": "xy", "f": "g=h", ":k= x": "esc"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// No reference reads the node's own secrets: its KCD_* variables, its data
// dir, its key and token files, also through a symbolic link.
func TestProtected(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	keyFile := filepath.Join(dir, "etc", "config.key")
	writeFile(t, filepath.Join(dataDir, "join-token"), canary)
	writeFile(t, keyFile, "k="+canary)
	writeFile(t, filepath.Join(dir, "ok", "p.properties"), "k=fine")
	link := filepath.Join(dir, "ok", "link.properties")
	if err := os.Symlink(keyFile, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KCD_JOIN_TOKEN", canary)
	p, err := NewProviders([]string{"file", "env", "directory"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Protect(dataDir, keyFile)
	got, err := p.Transform(map[string]string{"k": "${file:" + filepath.Join(dir, "ok", "p.properties") + ":k}"})
	if err != nil || got["k"] != "fine" {
		t.Fatalf("an unprotected file: %v %v", got, err)
	}
	for _, ref := range []string{
		"${env:KCD_JOIN_TOKEN}",
		"${env:kcd_join_token}",
		"${file:" + keyFile + ":k}",
		"${file:" + link + ":k}",
		"${directory:" + dataDir + ":join-token}",
		"${directory:" + filepath.Join(dir, "etc") + ":config.key}",
		"${file:" + dataDir + "/../data/join-token:k}",
	} {
		got, err := p.Transform(map[string]string{"k": ref})
		if err == nil {
			t.Errorf("%s: resolved to %d bytes", ref, len(got["k"]))
			continue
		}
		if strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), ref) {
			t.Errorf("%s: %v", ref, err)
		}
	}
}
