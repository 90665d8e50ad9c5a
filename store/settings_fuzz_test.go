package store

import (
	"net/url"
	"strings"
	"testing"
)

// escapeParts writes parts back the way parseValue reads them.
func escapeParts(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.ref != "" {
			b.WriteString(p.ref)
		} else {
			b.WriteString(strings.ReplaceAll(p.text, "${", "$${"))
		}
	}
	return b.String()
}

// FuzzParseValue: a settings value that parses is written back unchanged
// from its parts, and its references check and mask as written; under a key
// that names a secret, its mask is only references and Redacted.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		"kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd", "${file:/run/secrets/pw}", "$${env:X}", "$$${env:X}",
		"pre-${env:PW}post", "${oops", "${env:}", "${vault:x}", "${ env:X}", "${env:A}${file:/b}", "$", "$$", "}${env:a}}",
		"[redacted]",
	} {
		f.Add("password", s)
		f.Add("dsn", s)
	}
	f.Fuzz(func(t *testing.T, key, v string) {
		parts, err := parseValue(v)
		masked := MaskSettings(map[string]string{key: v})[key]
		if err != nil {
			if masked != Redacted {
				t.Fatalf("%q holds a malformed reference (%v) but masks as %q", v, err, masked)
			}
			return
		}
		if strings.Contains(masked, "\x00") {
			t.Fatalf("%s=%q masks as %q, with a NUL", key, v, masked)
		}
		if back := escapeParts(parts); back != v {
			t.Fatalf("%q parses to %+v, written back as %q", v, parts, back)
		}
		if masked == Redacted {
			return // all hidden: never less than the secrets
		}
		// The mask keeps every reference as written, in order.
		rest := masked
		for _, p := range parts {
			if p.ref == "" {
				continue
			}
			i := strings.Index(rest, p.ref)
			if i < 0 {
				t.Fatalf("%s=%q masks as %q, without its reference %s", key, v, masked, p.ref)
			}
			if secretKey(key) {
				// Only Redacted may stand between references.
				if between := rest[:i]; between != "" && between != Redacted {
					t.Fatalf("%s=%q masks as %q: %q shown", key, v, masked, between)
				}
			}
			rest = rest[i+len(p.ref):]
		}
		if secretKey(key) && rest != "" && rest != Redacted {
			t.Fatalf("%s=%q masks as %q: %q shown", key, v, masked, rest)
		}
	})
}

// FuzzMaskSettingsHidesPassword puts a password into the usual shapes of a
// store DSN and a secret setting: the mask never shows it, nor does
// MaskString of a text that quotes the value or the password.
func FuzzMaskSettingsHidesPassword(f *testing.F) {
	for _, s := range []struct {
		user, pw, host string
	}{
		{"kcd", "s3cret", "db:3306"},
		{"kcd", "p@ss/w?rd:x", "db"},
		{"k:cd", "it's \\ secret", "/var/run/pg"},
		{"kcd@x", "%40%zz", "db"},
		{"kcd", "a b;c&d=e", "db"},
	} {
		for form := range uint8(7) {
			f.Add(form, s.user, s.pw, s.host)
		}
	}
	f.Fuzz(func(t *testing.T, form uint8, user, pw, host string) {
		if form%7 == 0 || form%7 == 6 {
			if strings.ContainsAny(host, "@/?()") {
				return // the driver too would read the password up to the host's '@'
			}
		}
		if len(pw) < minRedactLen || strings.Contains(pw, "$") || strings.Contains(pw, "\x00") {
			return // short ones are not masked in text; "$" may start a reference
		}
		key, v, written := "dsn", "", pw
		switch form % 7 {
		case 0: // a MySQL DSN
			if strings.ContainsAny(user, ":@") {
				return // the password would start at the user's first ':'
			}
			v = user + ":" + pw + "@tcp(" + host + ")/kcd?parseTime=true"
		case 1: // a URL
			if strings.ContainsAny(host, "@/?#%") {
				return
			}
			u := &url.URL{Scheme: "postgres", User: url.UserPassword(user, pw), Host: host, Path: "/kcd", RawQuery: "sslmode=disable"}
			_, written, _ = strings.Cut(u.User.String(), ":")
			v = u.String()
		case 2: // a URL with the password in its query
			written = url.QueryEscape(pw)
			v = "postgres:///kcd?host=" + url.QueryEscape(host) + "&user=" + url.QueryEscape(user) + "&password=" + written + "&sslmode=disable"
		case 3: // a libpq string, the password quoted
			if strings.ContainsAny(host, " \t\n\v\f\r'\\=") {
				return // a host with these is quoted too
			}
			written = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
			v = "host=" + host + " user=kcd password=" + written + " dbname=kcd"
		case 4: // a semicolon-separated string
			if strings.ContainsAny(pw, " \t\n\v\f\r;&'") {
				return // not writable in that form
			}
			v = "Server=db;Password=" + pw + ";Database=kcd"
		case 5: // a setting that names a secret
			key, v = "ssl."+user+".password", pw
		case 6: // a MySQL DSN, the password a reference and another literal one in its parameters
			written = url.QueryEscape(pw)
			v = user + ":${env:PW}@tcp(" + host + ")/kcd?password=" + written
		}
		// What the mask may show is the value with the password taken
		// out: the password must be there once, and shown no more often
		// than the other parts hold it by chance.
		if strings.Count(v, written) != 1 || strings.Contains(Redacted, pw) || strings.Contains(key, pw) {
			return
		}
		other := strings.Replace(v, written, "\x01", 1)
		masked := MaskSettings(map[string]string{key: v})[key]
		cut := strings.ReplaceAll(masked, Redacted, "\x01")
		for _, s := range []string{pw, written} {
			if len(s) >= minRedactLen && strings.Count(cut, s) > strings.Count(other, s) {
				t.Fatalf("%s=%q masks as %q, which shows %q", key, v, masked, s)
			}
		}
		if strings.Contains(other, pw) {
			return
		}
		settings := map[string]string{key: v, "pool": "8"}
		line := "open " + v + ": auth with " + pw + " failed"
		if got := MaskString(line, settings); strings.Contains(strings.ReplaceAll(got, Redacted, "\x01"), pw) {
			t.Fatalf("MaskString(%q) = %q shows the password", line, got)
		}
	})
}
