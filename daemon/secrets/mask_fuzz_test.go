package secrets

import (
	"strings"
	"testing"
)

// FuzzMasker resolves a reference to any secret, alone and inside a
// longer value, and masks any text that quotes it: the masked text never
// holds the secret, nor MaskConfig a secret key's literal value.
func FuzzMasker(f *testing.F) {
	f.Add("kcd-canary-secret-pw", "jdbc:mysql://db/kcd?password=", "connect failed: ")
	f.Add("p@ss word", "", "")
	f.Add("aaaa", "aa", "aa")
	f.Fuzz(func(t *testing.T, secret, lit, text string) {
		if len(secret) < minSecretLen || strings.Contains(Hidden, secret) || strings.ContainsAny(secret, "[]") || HasReference(secret) {
			// Short ones are not masked, "[hidden]" itself is shown, and
			// a value that reads as a reference is one.
			return
		}
		raw := map[string]string{
			"connection.password": "${env:PW}",
			"connection.url":      lit + "${env:PW}" + lit,
			"ssl.key.password":    secret,
			"topic":               "t",
		}
		resolved := map[string]string{
			"connection.password": secret,
			"connection.url":      lit + secret + lit,
			"ssl.key.password":    secret,
			"topic":               "t",
		}
		m := NewMasker(nil, raw, resolved)
		for _, s := range []string{text + secret + text, lit + secret + lit, "[" + secret + "]", secret + secret} {
			if out := m.String(s); strings.Contains(out, secret) {
				t.Fatalf("%q masks as %q, which holds the secret %q", s, out, secret)
			}
		}
		if v := MaskConfig(raw, nil)["ssl.key.password"]; v != Hidden {
			t.Fatalf("MaskConfig shows ssl.key.password as %q", v)
		}
	})
}
