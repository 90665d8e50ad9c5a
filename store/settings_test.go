package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/store"
)

func TestResolveSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pwFile := write("pw", "file-pw\n")
	crlf := write("crlf", "crlf-pw\r\n")
	twoLines := write("two", "line1\n\n")
	empty := write("empty", "")
	t.Setenv("KCD_TEST_PW", "env-pw")
	t.Setenv("KCD_TEST_EMPTY", "")

	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"${env:KCD_TEST_PW}", "env-pw"},
		{"${env:KCD_TEST_EMPTY}", ""},
		{"kcd:${env:KCD_TEST_PW}@tcp(db:3306)/kcd", "kcd:env-pw@tcp(db:3306)/kcd"},
		{"${file:" + pwFile + "}", "file-pw"},
		{"${file:" + crlf + "}", "crlf-pw"},
		{"${file:" + twoLines + "}", "line1\n"}, // one newline trimmed
		{"${file:" + empty + "}", ""},
		{"postgres://kcd:${file:" + pwFile + "}@db/kcd?x=${env:KCD_TEST_PW}", "postgres://kcd:file-pw@db/kcd?x=env-pw"},
		{"$${env:KCD_TEST_PW}", "${env:KCD_TEST_PW}"},
		{"a$${b}$${", "a${b}${"},
		{"$$${env:KCD_TEST_PW}", "$${env:KCD_TEST_PW}"}, // "$$" then "${": the escape wins, left to right
		{"$", "$"},
		{"cost $5 {x}", "cost $5 {x}"},
		{"${env:KCD_TEST_PW}${env:KCD_TEST_PW}", "env-pwenv-pw"},
	} {
		got, err := store.ResolveSettings(map[string]string{"k": tc.in})
		if err != nil {
			t.Errorf("ResolveSettings(%q): %v", tc.in, err)
			continue
		}
		if got["k"] != tc.want {
			t.Errorf("ResolveSettings(%q) = %q, want %q", tc.in, got["k"], tc.want)
		}
	}

	// A resolved value is not resolved again.
	t.Setenv("KCD_TEST_NESTED", "${env:KCD_TEST_PW}")
	if got, err := store.ResolveSettings(map[string]string{"k": "${env:KCD_TEST_NESTED}"}); err != nil || got["k"] != "${env:KCD_TEST_PW}" {
		t.Errorf("nested reference: %q, %v", got["k"], err)
	}
	// The input is left alone.
	in := map[string]string{"dsn": "${env:KCD_TEST_PW}"}
	if _, err := store.ResolveSettings(in); err != nil || in["dsn"] != "${env:KCD_TEST_PW}" {
		t.Errorf("ResolveSettings changed its input: %v, %v", in, err)
	}
}

func TestResolveSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", store.MaxReferencedFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KCD_TEST_SECRET", "very-secret-value")
	for _, tc := range []struct {
		in   string
		want []string // in the message
	}{
		{"${env:KCD_TEST_UNSET_VAR}", []string{`"dsn"`, "${env:KCD_TEST_UNSET_VAR}", "not set"}},
		{"x:${env:KCD_TEST_SECRET}@h/${env:KCD_TEST_UNSET_VAR}", []string{`"dsn"`, "${env:KCD_TEST_UNSET_VAR}"}},
		{"${file:" + filepath.Join(dir, "missing") + "}", []string{`"dsn"`, "missing}", "no such file"}},
		{"${file:" + big + "}", []string{`"dsn"`, "larger than"}},
		{"${env:KCD_TEST_SECRET", []string{`"dsn"`, "no closing }"}},
		{"${vault:db/pw}", []string{`"dsn"`, `unknown reference kind "vault"`}},
		{"${KCD_TEST_SECRET}", []string{`"dsn"`, "malformed reference at byte 0", "$${"}},
		{"pw${Hunter2:x}", []string{`"dsn"`, "malformed reference at byte 2"}},
		{"${env:}", []string{`"dsn"`, "empty env name"}},
		{"${file:}", []string{`"dsn"`, "empty file name"}},
	} {
		got, err := store.ResolveSettings(map[string]string{"dsn": tc.in, "other": "${env:KCD_TEST_SECRET}"})
		if err == nil {
			t.Errorf("ResolveSettings(%q) = %v, want an error", tc.in, got)
			continue
		}
		if got != nil {
			t.Errorf("ResolveSettings(%q) returned settings with its error", tc.in)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ResolveSettings(%q): error %q lacks %q", tc.in, err, w)
			}
		}
		if strings.Contains(err.Error(), "very-secret") || strings.Contains(err.Error(), "unter2") || strings.Contains(err.Error(), "KCD_TEST_SECRET") {
			t.Errorf("ResolveSettings(%q): error %q shows a resolved value", tc.in, err)
		}
		if cerr := store.CheckSettings(map[string]string{"dsn": tc.in}); (cerr == nil) != strings.Contains(tc.in, "KCD_TEST_UNSET") && !strings.Contains(tc.in, "${file:/") {
			t.Errorf("CheckSettings(%q) = %v", tc.in, cerr)
		}
	}
	// Every bad setting is reported at once.
	_, err := store.ResolveSettings(map[string]string{"a": "${env:KCD_TEST_UNSET_A}", "b": "${env:KCD_TEST_UNSET_B}"})
	if err == nil || !strings.Contains(err.Error(), "UNSET_A") || !strings.Contains(err.Error(), "UNSET_B") {
		t.Errorf("two bad settings: %v", err)
	}
}

func TestMaskSettings(t *testing.T) {
	const r = store.Redacted
	for _, tc := range []struct{ key, in, want string }{
		// Values of keys that name a secret.
		{"password", "hunter22", r},
		{"db_password", "x", r},
		{"secret", "s", r},
		{"api-token", "t0k", r},
		{"sslkey", "/etc/ssl/key.pem", r},
		{"access_key", "AKIA", r},
		{"keys", "a,b", r},
		{"password", "${env:KCD_DB_PASSWORD}", "${env:KCD_DB_PASSWORD}"},
		{"password", "${file:/run/secrets/pw}", "${file:/run/secrets/pw}"},
		{"password", "pre-${env:PW}", r + "${env:PW}"},
		{"password", "", ""},
		{"keyspace", "kcd", "kcd"},
		{"pool-size", "8", "8"},

		// MySQL DSNs.
		{"dsn", "kcd:s3cret@tcp(db:3306)/kcd", "kcd:" + r + "@tcp(db:3306)/kcd"},
		{"dsn", "kcd:s3cret@tcp(db:3306)/kcd?parseTime=true&loc=UTC", "kcd:" + r + "@tcp(db:3306)/kcd?parseTime=true&loc=UTC"},
		{"dsn", "kcd:p@ss@tcp(db:3306)/kcd", "kcd:" + r + "@tcp(db:3306)/kcd"},
		{"dsn", "kcd:p@ss/w?rd:x@tcp(db:3306)/kcd?timeout=5s", "kcd:" + r + "@tcp(db:3306)/kcd?timeout=5s"},
		{"dsn", "kcd:pw@unix(/var/run/mysqld/mysqld.sock)/kcd", "kcd:" + r + "@unix(/var/run/mysqld/mysqld.sock)/kcd"},
		{"dsn", "kcd@unix(/var/run/mysqld/mysqld.sock)/kcd", "kcd@unix(/var/run/mysqld/mysqld.sock)/kcd"},
		{"dsn", "kcd@tcp(db:3306)/kcd", "kcd@tcp(db:3306)/kcd"},
		{"dsn", "kcd:@tcp(db:3306)/kcd", "kcd:@tcp(db:3306)/kcd"},
		{"dsn", "/kcd", "/kcd"},
		{"dsn", "kcd:pw@/kcd", "kcd:" + r + "@/kcd"},
		{"dsn", "kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd", "kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd"},
		{"dsn", "kcd:${file:/run/secrets/db/pw}@tcp(db:3306)/kcd", "kcd:${file:/run/secrets/db/pw}@tcp(db:3306)/kcd"},
		{"dsn", "${env:KCD_STORE_DSN}", "${env:KCD_STORE_DSN}"},
		{"dsn", "kcd:lit${env:PW}@tcp(db:3306)/kcd", "kcd:" + r + "${env:PW}@tcp(db:3306)/kcd"},
		{"dsn", "kcd:pw@tcp(db:3306)/kcd?password=other", "kcd:" + r + "@tcp(db:3306)/kcd?password=" + r},

		// PostgreSQL URLs.
		{"dsn", "postgres://kcd:s3cret@db:5432/kcd?sslmode=disable", "postgres://kcd:" + r + "@db:5432/kcd?sslmode=disable"},
		{"dsn", "postgresql://kcd:p@ss:w/rd@db/kcd", "postgresql://kcd:" + r + "@db/kcd"},
		{"dsn", "postgres://kcd:p%40ss@db/kcd", "postgres://kcd:" + r + "@db/kcd"},
		{"dsn", "postgres://kcd@db/kcd", "postgres://kcd@db/kcd"},
		{"dsn", "postgres://db:5432/kcd", "postgres://db:5432/kcd"},
		{"dsn", "postgres://kcd:pw@/kcd?host=/var/run/postgresql", "postgres://kcd:" + r + "@/kcd?host=/var/run/postgresql"},
		{"dsn", "postgres:///kcd?host=/tmp&user=kcd&password=s3cret&sslmode=disable", "postgres:///kcd?host=/tmp&user=kcd&password=" + r + "&sslmode=disable"},
		{"dsn", "postgres://kcd:${env:PGPW}@db/kcd", "postgres://kcd:${env:PGPW}@db/kcd"},
		{"dsn", "postgres://kcd:pw@db/kcd?application_name=a@b", "postgres://kcd:" + r + "@db/kcd?application_name=a@b"},

		// libpq key=value strings.
		{"dsn", "host=db user=kcd password=s3cret dbname=kcd", "host=db user=kcd password=" + r + " dbname=kcd"},
		{"dsn", "host=db password = 'it\\'s secret' dbname=kcd", "host=db password = " + r + " dbname=kcd"},
		{"dsn", "host=db password=${env:PGPW}", "host=db password=${env:PGPW}"},
		{"dsn", "host=db sslpassword=x sslkey=/k.pem", "host=db sslpassword=" + r + " sslkey=" + r},
		{"dsn", "Server=db;Password=s3cret;Database=kcd", "Server=db;Password=" + r + ";Database=kcd"},
		{"dsn", "opts=a?password=s3cret", "opts=a?password=" + r},
		{"dsn", "host=::1 user=kcd password='p@ssword' dbname=kcd", "host=:" + r + " dbname=kcd"},
		{"dsn", "u=x:pw@tcp(db)/kcd?password=s3cret", "u=x:" + r + "@tcp(db)/kcd?password=" + r},

		// Escapes stay as written.
		{"note", "$${env:X}", "$${env:X}"},
		// A malformed reference: the value might be a secret.
		{"dsn", "kcd:${oops@tcp(db)/kcd", r},
	} {
		got := store.MaskSettings(map[string]string{tc.key: tc.in})[tc.key]
		if got != tc.want {
			t.Errorf("MaskSettings(%s=%q)\n got %q\nwant %q", tc.key, tc.in, got, tc.want)
		}
	}
	if store.MaskSettings(nil) != nil {
		t.Error("MaskSettings(nil) is not nil")
	}
	in := map[string]string{"password": "x"}
	store.MaskSettings(in)
	if in["password"] != "x" {
		t.Error("MaskSettings changed its input")
	}
}

func TestMaskString(t *testing.T) {
	settings := map[string]string{
		"dsn":      "kcd:p@ss/word1@tcp(db.internal:3306)/kcd",
		"url":      "postgres://kcd:s%40cret2@pg/kcd",
		"conn":     "host=pg password='quoted3' user=kcd",
		"password": "plainpw4",
		"pool":     "8",
		"token":    "abc", // too short
	}
	for _, tc := range []struct{ in, want string }{
		{"dial kcd:p@ss/word1@tcp(db.internal:3306)/kcd: refused", "dial [redacted]: refused"},
		{"auth with p@ss/word1 failed", "auth with [redacted] failed"},
		{"auth with s@cret2 failed", "auth with [redacted] failed"},
		{"auth with s%40cret2 failed", "auth with [redacted] failed"},
		{"auth with quoted3 and 'quoted3'", "auth with [redacted] and [redacted]"},
		{"plainpw4 pool 8 abc", "[redacted] pool 8 abc"},
		{"nothing here", "nothing here"},
	} {
		if got := store.MaskString(tc.in, settings); got != tc.want {
			t.Errorf("MaskString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := store.MaskString("x", nil); got != "x" {
		t.Errorf("MaskString without settings = %q", got)
	}
}

// Open's errors hide the secrets inside a DSN, not only the whole DSN.
func TestOpenRedactsPasswordInDSN(t *testing.T) {
	settings := map[string]string{"dsn": "postgres://kcd:pa%2Fss-word@pg.internal/kcd"}
	name := unique("test-dsn")
	store.Register(name, func(_ context.Context, s map[string]string) (store.Store, error) {
		return nil, fmt.Errorf("password authentication failed for password pa/ss-word: %w", errRefused)
	})
	_, err := store.Open(t.Context(), name, settings)
	if err == nil || strings.Contains(err.Error(), "ss-word") || !errors.Is(err, errRefused) {
		t.Fatalf("Open: %v", err)
	}
}

func TestMaskError(t *testing.T) {
	settings := map[string]string{"dsn": "kcd:Sup3rS3cret@tcp(db:3306)/kcd"}
	if store.MaskError(nil, settings) != nil {
		t.Fatal("MaskError(nil) is not nil")
	}
	plain := errors.New("no secret here")
	if store.MaskError(plain, settings) != plain {
		t.Fatal("MaskError changed an error without secrets")
	}
	err := store.MaskError(fmt.Errorf("load: auth as Sup3rS3cret: %w", errRefused), settings)
	if err.Error() != "load: auth as [redacted]: connection refused" || !errors.Is(err, errRefused) {
		t.Fatalf("MaskError = %q (wraps the original: %v)", err, errors.Is(err, errRefused))
	}
}
