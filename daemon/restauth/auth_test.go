package restauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

const (
	adminPW    = "kcd-canary-secret-admin-pw"
	argonPW    = "kcd-canary-secret-argon-pw"
	opToken    = "kcd-canary-secret-operate-token"
	nodeSecret = "kcd-canary-secret-node-0123456789abcdef"
)

func bcryptHash(t testing.TB, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func argonHash(pw string) string {
	salt := []byte("kcd-salt-1234567")
	key := argon2.IDKey([]byte(pw), salt, 1, 1024, 1, 32)
	return fmt.Sprintf("$argon2id$v=19$m=1024,t=1,p=1$%s$%s", base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

func testFile(t testing.TB) string {
	return fmt.Sprintf(`users:
  - name: alice
    role: admin
    password: %q
  - name: bob
    role: read
    password: %q
  - name: ci
    role: operate
    tokens:
      - %s
  - name: dash
    role: read
    certificate: dash.example.com
`, bcryptHash(t, adminPW), argonHash(argonPW), TokenHash(opToken))
}

func writeFile(t testing.TB, dir, body string) string {
	p := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newAuth(t testing.TB, cfg Config) *Authenticator {
	if cfg.File == "" {
		cfg.File = writeFile(t, t.TempDir(), testFile(t))
	}
	if cfg.NodeSecret == nil {
		cfg.NodeSecret = []byte(nodeSecret)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseErrors(t *testing.T) {
	good := bcryptHash(t, adminPW)
	tooCostly := strings.Replace(good, "$04$", "$16$", 1)
	for _, tc := range []struct {
		name, file, want string
	}{
		{"plain password", "users:\n  - name: a\n    role: read\n    password: " + adminPW + "\n", "line 4: user \"a\": password is not a bcrypt"},
		{"unknown role", "users:\n  - name: a\n    role: superuser\n    tokens: [" + TokenHash("x") + "]\n", "line 3: user \"a\": unknown role \"superuser\""},
		{"node role", "users:\n  - name: a\n    role: node\n    tokens: [" + TokenHash("x") + "]\n", "unknown role \"node\""},
		{"no role", "users:\n  - name: a\n    tokens: [" + TokenHash("x") + "]\n", "line 2: user \"a\" needs a role"},
		{"duplicate user", "users:\n  - name: a\n    role: read\n    tokens: [" + TokenHash("x") + "]\n  - name: a\n    role: read\n    tokens: [" + TokenHash("y") + "]\n", "line 5: user \"a\" is defined twice"},
		{"duplicate token", "users:\n  - name: a\n    role: read\n    tokens: [" + TokenHash(opToken) + "]\n  - name: b\n    role: admin\n    tokens: [" + TokenHash(opToken) + "]\n", "line 5: user \"b\": a token hash is listed twice (also under user \"a\")"},
		{"token in clear", "users:\n  - name: a\n    role: read\n    tokens: [" + opToken + "]\n", "line 4: user \"a\": a token must be given as its hash"},
		{"no credentials", "users:\n  - name: a\n    role: read\n", "user \"a\" has no password, tokens or certificate"},
		{"unknown key", "users:\n  - name: a\n    role: read\n    passwd: x\n", "line 4: unknown key \"passwd\""},
		{"bcrypt cost", "users:\n  - name: a\n    role: read\n    password: \"" + tooCostly + "\"\n", "bcrypt cost 16 is above 15"},
		{"argon2i", "users:\n  - name: a\n    role: read\n    password: \"$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA\"\n", "other than argon2id"},
		{"argon2 memory", "users:\n  - name: a\n    role: read\n    password: \"$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA\"\n", "parameters exceed"},
		{"duplicate certificate", "users:\n  - name: a\n    role: read\n    certificate: x\n  - name: b\n    role: read\n    certificate: x\n", "certificate CN \"x\" is already user \"a\"'s"},
		{"not a list", "users: alice\n", "users must be a list"},
		{"bad yaml", "users:\n  - name: [\n", "not valid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "kcd-canary-secret-") {
				t.Fatalf("the error shows a secret: %v", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	us, err := Parse([]byte(testFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	if us.Len() != 4 {
		t.Fatalf("%d users, want 4", us.Len())
	}
	for name, role := range map[string]Role{"alice": RoleAdmin, "bob": RoleRead, "ci": RoleOperate, "dash": RoleRead} {
		if u, ok := us.Lookup(name); !ok || u.Role != role {
			t.Errorf("user %s: %+v, want role %v", name, u, role)
		}
	}
}

func TestRoleAllows(t *testing.T) {
	for _, tc := range []struct {
		have, need Role
		ok         bool
	}{
		{RoleRead, RoleRead, true}, {RoleRead, RoleOperate, false}, {RoleOperate, RoleRead, true},
		{RoleOperate, RoleAdmin, false}, {RoleAdmin, RoleAdmin, true}, {RoleAdmin, RoleNode, false},
		{RoleNode, RoleNode, true}, {RoleNode, RoleAdmin, true}, {RoleNone, RoleRead, false}, {RoleNone, RoleNone, true},
	} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%v.Allows(%v) = %v, want %v", tc.have, tc.need, got, tc.ok)
		}
	}
}

func certRequest(cn string, verified bool) *http.Request {
	r := httptest.NewRequest("GET", "/connectors", nil)
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	if verified {
		r.TLS.VerifiedChains = [][]*x509.Certificate{{c}}
	}
	return r
}

func TestAuthenticate(t *testing.T) {
	a := newAuth(t, Config{})
	basic := func(u, p string) *http.Request {
		r := httptest.NewRequest("GET", "/connectors", nil)
		r.SetBasicAuth(u, p)
		return r
	}
	bearer := func(tok string) *http.Request {
		r := httptest.NewRequest("GET", "/connectors", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want Principal
		err  error
	}{
		{"bcrypt", basic("alice", adminPW), Principal{"alice", RoleAdmin, "basic"}, nil},
		{"argon2id", basic("bob", argonPW), Principal{"bob", RoleRead, "basic"}, nil},
		{"wrong password", basic("alice", argonPW), Principal{}, ErrInvalidCredentials},
		{"unknown user", basic("mallory", adminPW), Principal{}, ErrInvalidCredentials},
		{"user without password", basic("ci", opToken), Principal{}, ErrInvalidCredentials},
		{"token", bearer(opToken), Principal{"ci", RoleOperate, "token"}, nil},
		{"token lower-case scheme", func() *http.Request { r := bearer(opToken); r.Header.Set("Authorization", "bearer "+opToken); return r }(), Principal{"ci", RoleOperate, "token"}, nil},
		{"wrong token", bearer("kcd-canary-secret-nope"), Principal{}, ErrInvalidCredentials},
		{"node secret", bearer(nodeSecret), Principal{NodeName, RoleNode, "node"}, nil},
		{"node secret as a password", basic("kcd-node", nodeSecret), Principal{}, ErrInvalidCredentials},
		{"other scheme", func() *http.Request { r := bearer(""); r.Header.Set("Authorization", "Digest x"); return r }(), Principal{}, ErrInvalidCredentials},
		{"nothing", httptest.NewRequest("GET", "/", nil), Principal{}, ErrNoCredentials},
		{"verified certificate", certRequest("dash.example.com", true), Principal{"dash", RoleRead, "certificate"}, nil},
		{"unknown certificate", certRequest("evil.example.com", true), Principal{}, ErrInvalidCredentials},
		{"unverified certificate", certRequest("dash.example.com", false), Principal{}, ErrNoCredentials},
		{"bad header beats a good certificate", func() *http.Request {
			r := certRequest("dash.example.com", true)
			r.Header.Set("Authorization", "Bearer kcd-canary-secret-nope")
			return r
		}(), Principal{}, ErrInvalidCredentials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(tc.r)
			if tc.err != nil {
				if err == nil || !strings.Contains(err.Error(), tc.err.Error()) {
					t.Fatalf("Authenticate = %+v, %v; want %v", p, err, tc.err)
				}
				if strings.Contains(err.Error(), "kcd-canary-secret-") {
					t.Fatalf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil || p != tc.want {
				t.Fatalf("Authenticate = %+v, %v; want %+v", p, err, tc.want)
			}
		})
	}
}

func TestNoNodeSecretNoNode(t *testing.T) {
	a := newAuth(t, Config{NodeSecret: []byte{}})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer ")
	if _, err := a.Authenticate(r); err == nil {
		t.Fatal("an empty bearer token authenticated")
	}
}

func TestPasswordChecksCached(t *testing.T) {
	a := newAuth(t, Config{})
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", adminPW)
	for range 3 {
		if _, err := a.Authenticate(r); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.hashChecks.Load(); n != 1 {
		t.Fatalf("%d hash checks for 3 requests with the same password, want 1", n)
	}
	r.SetBasicAuth("alice", "kcd-canary-secret-wrong")
	for range 2 {
		if _, err := a.Authenticate(r); err == nil {
			t.Fatal("a wrong password authenticated")
		}
	}
	if n := a.hashChecks.Load(); n != 2 {
		t.Fatalf("%d hash checks after a wrong password sent twice, want 2", n)
	}
}

func TestPasswordCacheBounded(t *testing.T) {
	a := newAuth(t, Config{CacheSize: 4})
	for i := range 20 {
		r := httptest.NewRequest("GET", "/", nil)
		r.SetBasicAuth("alice", fmt.Sprintf("kcd-canary-secret-%d", i))
		_, _ = a.Authenticate(r)
	}
	a.mu.Lock()
	n := len(a.cache)
	a.mu.Unlock()
	if n > 4 {
		t.Fatalf("cache holds %d results, bound 4", n)
	}
}

// TestPasswordChecksBounded holds the only hash slot and fills the waiting
// room: the next password check is refused at once instead of queueing.
func TestPasswordChecksBounded(t *testing.T) {
	a := newAuth(t, Config{MaxHashChecks: 1, MaxHashWaiters: 1})
	a.slots <- struct{}{} // every check waits
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := httptest.NewRequest("GET", "/", nil)
			r.SetBasicAuth("alice", fmt.Sprintf("kcd-canary-secret-w%d", i))
			_, err := a.Authenticate(r)
			errs <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.waiters.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d checks waiting, want 2", a.waiters.Load())
		}
		time.Sleep(time.Millisecond)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", adminPW)
	if _, err := a.Authenticate(r); err != ErrBusy {
		t.Fatalf("a check beyond the bound: %v, want ErrBusy", err)
	}
	// Tokens need no hash slot.
	r = httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+opToken)
	if _, err := a.Authenticate(r); err != nil {
		t.Fatalf("a token while password checks wait: %v", err)
	}
	<-a.slots
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != ErrInvalidCredentials {
			t.Errorf("a waiting check: %v, want ErrInvalidCredentials", err)
		}
	}
}

func TestPasswordCheckWaitEndsWithRequest(t *testing.T) {
	a := newAuth(t, Config{MaxHashChecks: 1})
	a.slots <- struct{}{}
	defer func() { <-a.slots }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	r.SetBasicAuth("alice", adminPW)
	if _, err := a.Authenticate(r); err != ErrBusy {
		t.Fatalf("%v, want ErrBusy once the request is gone", err)
	}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, testFile(t))
	var logs logBuf
	a := newAuth(t, Config{File: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	newTok := "kcd-canary-secret-new-token"
	bearer := func(tok string) error {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		_, err := a.Authenticate(r)
		return err
	}
	if bearer(newTok) == nil {
		t.Fatal("a token not in the file authenticated")
	}
	if a.Reload() {
		t.Fatal("Reload of an unchanged file reports a change")
	}
	writeFile(t, dir, testFile(t)+"  - name: eve\n    role: read\n    tokens: ["+TokenHash(newTok)+"]\n")
	if !a.Reload() {
		t.Fatal("Reload did not take the changed file")
	}
	if err := bearer(newTok); err != nil {
		t.Fatalf("the token added to the file: %v", err)
	}
	// A broken file keeps the users and is logged once, without secrets.
	writeFile(t, dir, "users:\n  - name: eve\n    role: read\n    password: kcd-canary-secret-plain\n")
	for range 3 {
		if a.Reload() {
			t.Fatal("Reload took a broken file")
		}
	}
	if err := bearer(newTok); err != nil {
		t.Fatalf("after a broken file: %v", err)
	}
	if n := strings.Count(logs.String(), "rest auth file is broken"); n != 1 {
		t.Fatalf("the broken file is logged %d times, want once:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "kcd-canary-secret-") || strings.Contains(logs.String(), "$2a$04$") {
		t.Fatalf("a secret or hash in the logs:\n%s", logs.String())
	}
	// A removed file keeps the users too.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	a.Reload()
	if err := bearer(newTok); err != nil {
		t.Fatalf("after the file was removed: %v", err)
	}
}

func TestReadNodeSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node")
	if err := os.WriteFile(p, []byte("kcd-canary-secret-short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNodeSecret(p); err == nil || strings.Contains(err.Error(), "kcd-canary") {
		t.Fatalf("a short secret: %v", err)
	}
	if err := os.WriteFile(p, []byte(nodeSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadNodeSecret(p)
	if err != nil || string(b) != nodeSecret {
		t.Fatalf("ReadNodeSecret = %q, %v", b, err)
	}
}

func TestTokenHash(t *testing.T) {
	tok := make([]byte, 8)
	_, _ = rand.Read(tok)
	h := TokenHash(string(tok))
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("TokenHash = %q", h)
	}
}
