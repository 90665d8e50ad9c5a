package restauth

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAuthenticate sends any Authorization header: it never panics, and a
// request is authenticated only by a header that carries a real secret:
// the node secret, a user's token, or a user's password with its name.
func FuzzAuthenticate(f *testing.F) {
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for _, h := range []string{
		basic("alice", adminPW), basic("bob", argonPW), basic("alice", ""), basic("", ""), basic("nobody", adminPW),
		"Bearer " + opToken, "bearer   " + nodeSecret + " ", "Bearer", "Bearer ", "Basic", "Basic !!!", "Digest x",
		"Basic " + base64.StdEncoding.EncodeToString([]byte("alice")), " Basic " + base64.StdEncoding.EncodeToString([]byte("bob:"+argonPW)),
	} {
		f.Add(h)
	}
	a := newAuth(f, Config{})
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest("GET", "/connectors", nil)
		r.Header["Authorization"] = []string{h}
		p, err := a.Authenticate(r)
		if err != nil {
			if p != (Principal{}) {
				t.Fatalf("%q: an error (%v) with a principal %+v", h, err, p)
			}
			return
		}
		ok := false
		switch p.Method {
		case "node":
			ok = p.Role == RoleNode && strings.Contains(h, nodeSecret)
		case "token":
			ok = p.Name == "ci" && strings.Contains(h, opToken)
		case "basic":
			u, pw, _ := r.BasicAuth()
			ok = u == p.Name && (u == "alice" && pw == adminPW || u == "bob" && pw == argonPW)
		}
		if !ok {
			t.Fatalf("%q authenticated as %+v", h, p)
		}
	})
}

// FuzzParseCredentials reads any credentials file: it never panics, and no
// error shows a password, hash or token of the file.
func FuzzParseCredentials(f *testing.F) {
	f.Add(testFile(f), "")
	f.Add("users:\n  - name: a\n    role: read\n    password: ", "")
	f.Add("users:\n  - name: a\n    role: operate\n    tokens: [", "]")
	f.Add("users:\n  - {name: a, role: admin, certificate: cn, password: \"$argon2id$v=19$m=1024,t=1,p=1$", "$x\"}")
	f.Add("users:\n  - name: a\n    role: read\n    password: \"$2a$04$", "\"")
	f.Fuzz(func(t *testing.T, before, after string) {
		const secret = "kcd-canary-secret-fuzz"
		data := before + secret + after
		_, err := Parse([]byte(data))
		if err == nil || !strings.Contains(err.Error(), secret) {
			return
		}
		// The canary may be a name, a role or a key, which errors name;
		// it must not be shown as a password, hash or token.
		if where := secretField(before); where != "" {
			t.Fatalf("%q: error shows the %s: %v", data, where, err)
		}
	})
}

// secretField tells which secret field a value that follows text would be
// in: the last key of its line, or of the line a list item continues.
func secretField(text string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		for _, k := range []string{"password", "tokens"} {
			if j := strings.LastIndex(l, k+":"); j >= 0 && !strings.ContainsAny(l[j:], ",}") {
				return k
			}
		}
		if i == len(lines)-1 && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-[")) != "" {
			return "" // the value has a key of its own on its line
		}
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "[") {
			return ""
		}
	}
	return ""
}
