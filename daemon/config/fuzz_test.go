package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canary is the secret FuzzLoad hands kcd through the environment; no
// error may show it.
const canary = "kcd-canary-secret-fuzz"

// secretField tells whether a setting's value is a secret (shown hides it).
func secretField(name string) bool { return shown(name, "") == "(value hidden)" }

func fieldIndex(name string) uint8 {
	for i, f := range fields() {
		if f.name == name {
			return uint8(i)
		}
	}
	panic("no setting " + name)
}

// FuzzLoad loads any YAML file with one KCD_* variable of any value, and
// secrets in the environment: loading never panics, no error shows a
// secret, and every setting that loaded is written by its flag's text form
// in a way that reads back the same (what the file says, the environment
// and the command line can say too).
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../../deploy/kcd.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0), "7")
	}
	for _, s := range []struct {
		yaml  string
		field string
		value string
	}{
		{"dev-kafka: true\nroles: [raft, worker]\nraft-election-timeout: 750ms\n", "roles", "raft+worker"},
		{"dev-kafka: true\nstore:\n  backend: postgres\n  dsn: postgres://kcd:${env:PGPW}@db/kcd\n  settings:\n    pool-size: \"8\"\n", "store-setting", "pool-size=16,hosts=a,b"},
		{"dev-kafka: true\nmemory-limit: 80MiB\nworker-in-flight-bytes: 32MiB\n", "task-in-flight-bytes", "1GiB"},
		{"dev-kafka: true\nstore: {backend: mysql, dsn: \"u:${file:/run/s:pw}@tcp(db)/k\"}\n", "store-dsn", "${env:X"},
		{"node-id: 18446744073709551616\n", "worker-weight", "NaN"},
		{"dev-kafka: true\njoin-token: short\n", "join-token", "x"},
		{"&a [*a]", "node-id", ""},
		{"worker-weight: .nan\nleader-weight-factor: -0.0\n", "session-timeout", "-1h"},
		{"dev-kafka: true\nstore: {backend: mysql}\n", "store-dsn", "n{env:X"},
	} {
		f.Add([]byte(s.yaml), fieldIndex(s.field), s.value)
	}
	all := fields()
	f.Fuzz(func(t *testing.T, yaml []byte, field uint8, value string) {
		if len(yaml) > 1<<16 {
			return
		}
		path := filepath.Join(t.TempDir(), "kcd.yaml")
		if err := os.WriteFile(path, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		fd := all[int(field)%len(all)]
		env := map[string]string{
			"KCD_JOIN_TOKEN":    canary + "-join",
			"KCD_STORE_DSN":     "user:" + canary + "@tcp(db)/kcd",
			"KCD_STORE_SETTING": "password=" + canary,
		}
		switch {
		case fd.name == storeSettingFlag: // the secret is a value, not a key
			env[EnvName(fd.name)] = "password=" + canary + "," + value
		case fd.name == "store-dsn":
			// A DSN is shown with its password masked (docs/stores.md), so
			// the secret is the password, behind any user name.
			env[EnvName(fd.name)] = "u" + value + ":" + canary + "@tcp(db)/kcd"
		case secretField(fd.name):
			env[EnvName(fd.name)] = value + canary + value
		default:
			env[EnvName(fd.name)] = value
		}
		c, err := Load(path, envOf(env), nil)
		if err != nil {
			if strings.Contains(err.Error(), canary) && !strings.Contains(string(yaml), canary) {
				t.Fatalf("an error shows a secret: %v", err)
			}
			// Check what the file alone sets.
			if c = Default(); c.LoadFile(path) != nil {
				return
			}
		}
		for _, fd := range all {
			v := fd.get(&c)
			if secretField(fd.name) {
				if strings.Contains(v, canary) {
					t.Fatalf("%s shows its secret: %q", fd.name, v)
				}
				continue
			}
			c2 := Default()
			if err := fd.set(&c2, v); err != nil {
				t.Fatalf("%s: %q, as written for the environment, does not read back: %v", fd.name, v, err)
			}
			if got := fd.get(&c2); got != v {
				t.Fatalf("%s: %q reads back as %q", fd.name, v, got)
			}
		}
		for _, s := range []string{c.Store.String(), c.Store.GoString(), c.Store.LogValue().String()} {
			if strings.Contains(s, canary) {
				t.Fatalf("the store config shows a secret: %s", s)
			}
		}
	})
}
