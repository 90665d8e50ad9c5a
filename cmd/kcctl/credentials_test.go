package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
)

func tokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(h[:])
}

func writeTemp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noKcctlEnv clears kcctl's variables for the test, and points
// KCCTL_CONFIG at cfg ("" a file that does not exist).
func noKcctlEnv(t *testing.T, cfg string) {
	for _, v := range []string{"KCCTL_SERVER", "KCCTL_TOKEN", "KCCTL_USER"} {
		t.Setenv(v, "")
	}
	t.Setenv("KCCTL_PASSWORD", "")
	os.Unsetenv("KCCTL_PASSWORD")
	if cfg == "" {
		t.Setenv("KCCTL_CONFIG", "")
		t.Setenv("HOME", t.TempDir())
		return
	}
	t.Setenv("KCCTL_CONFIG", cfg)
}

func resolve(t *testing.T, args ...string) (connection, error) {
	t.Helper()
	g := &globals{}
	fs := pflag.NewFlagSet("kcctl", pflag.ContinueOnError)
	fs.StringVar(&g.server, "server", defaultServer, "")
	fs.StringVar(&g.token, "token", "", "")
	fs.StringVar(&g.user, "user", "", "")
	fs.StringVar(&g.passwordFile, "password-file", "", "")
	fs.StringVar(&g.context, "context", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return resolveConnection(fs, g)
}

func TestCredentialPrecedence(t *testing.T) {
	dir := t.TempDir()
	writeTemp(t, dir, "ctx.pw", "kcd-canary-secret-ctx-pw\n")
	flagPW := writeTemp(t, dir, "flag.pw", "kcd-canary-secret-flag-pw\n")
	cfg := writeTemp(t, dir, "config.yaml", `current-context: prod
contexts:
  - name: prod
    server: http://prod.invalid:8083
    token: kcd-canary-secret-ctx-token
  - name: staging
    server: http://staging.invalid:8083
    user: carol
    password-file: ctx.pw
`)
	noKcctlEnv(t, cfg)

	c, err := resolve(t)
	if err != nil || c.server != "http://prod.invalid:8083" || c.opts.Credentials.Token != "kcd-canary-secret-ctx-token" || !strings.Contains(c.creds, "context prod") {
		t.Fatalf("current context: %+v, %v", c, err)
	}
	c, err = resolve(t, "--context", "staging")
	if err != nil || c.server != "http://staging.invalid:8083" || c.opts.Credentials.User != "carol" || c.opts.Credentials.Password != "kcd-canary-secret-ctx-pw" {
		t.Fatalf("--context staging: %+v, %v", c, err)
	}
	if _, err := resolve(t, "--context", "nope"); err == nil || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Fatalf("unknown context: %v", err)
	}

	// The environment beats the context, flags beat the environment.
	t.Setenv("KCCTL_SERVER", "http://env.invalid:8083")
	t.Setenv("KCCTL_USER", "bob")
	t.Setenv("KCCTL_PASSWORD", "kcd-canary-secret-env-pw")
	c, err = resolve(t)
	if err != nil || c.server != "http://env.invalid:8083" || c.opts.Credentials.User != "bob" || c.opts.Credentials.Password != "kcd-canary-secret-env-pw" || c.opts.Credentials.Token != "" {
		t.Fatalf("environment: %+v, %v", c, err)
	}
	c, err = resolve(t, "--server", "http://flag.invalid:8083", "--token", "kcd-canary-secret-flag-token")
	if err != nil || c.server != "http://flag.invalid:8083" || c.opts.Credentials.Token != "kcd-canary-secret-flag-token" || c.opts.Credentials.User != "" {
		t.Fatalf("flags: %+v, %v", c, err)
	}
	// --user takes its password from --password-file, else the environment.
	c, err = resolve(t, "--user", "dave", "--password-file", flagPW)
	if err != nil || c.opts.Credentials.User != "dave" || c.opts.Credentials.Password != "kcd-canary-secret-flag-pw" {
		t.Fatalf("--user with --password-file: %+v, %v", c, err)
	}
	c, err = resolve(t, "--user", "dave")
	if err != nil || c.opts.Credentials.Password != "kcd-canary-secret-env-pw" {
		t.Fatalf("--user with KCCTL_PASSWORD: %+v, %v", c, err)
	}
	if _, err := resolve(t, "--user", "dave", "--token", "x"); err == nil {
		t.Fatal("--user and --token together were accepted")
	}
	if strings.Contains(c.creds, "kcd-canary-secret-") {
		t.Fatalf("the description shows a secret: %s", c.creds)
	}
}

func TestNoConfigFileNoCredentials(t *testing.T) {
	noKcctlEnv(t, "")
	c, err := resolve(t)
	if err != nil || c.server != defaultServer || c.opts.Credentials != (connection{}).opts.Credentials || c.creds != "none" {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestAuthNewTokenAndHashPassword(t *testing.T) {
	code, out, errOut := kcctl(t, "auth", "new-token")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || lines[1] != tokenHash(lines[0]) {
		t.Fatalf("new-token: exit %d, %q %q", code, out, errOut)
	}
	root, _ := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetIn(strings.NewReader("kcd-canary-secret-pw\n"))
	root.SetArgs([]string{"auth", "hash-password", "--cost", "4"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), `password: "$2a$04$`) || strings.Contains(buf.String(), "kcd-canary") {
		t.Fatalf("hash-password printed %q", buf.String())
	}
}

// startAuthNode runs a node whose REST API authenticates with the users
// of authFile.
func startAuthNode(t *testing.T, authFile, nodeTokenFile string) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.DevKafka = true
	cfg.DevKafkaPort = 0
	cfg.PeerAddr = "127.0.0.1:0"
	cfg.RESTAuthFile, cfg.NodeTokenFile = authFile, nodeTokenFile
	n := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n.RESTURL()
}

// kcctl against a node that authenticates: a token from the context file
// gets in, no credentials get exit 4 and a message saying so, and a read
// user's write gets exit 4 and a message about its role.
func TestKcctlCredentialsFromContext(t *testing.T) {
	dir := t.TempDir()
	const adminTok, readTok = "kcd-canary-secret-kcctl-admin", "kcd-canary-secret-kcctl-read"
	auth := writeTemp(t, dir, "auth.yaml", fmt.Sprintf("users:\n  - {name: admin, role: admin, tokens: [%s]}\n  - {name: viewer, role: read, tokens: [%s]}\n", tokenHash(adminTok), tokenHash(readTok)))
	nodeTok := writeTemp(t, dir, "node", "kcd-canary-secret-node-0123456789abcdef0123")
	url := startAuthNode(t, auth, nodeTok)
	cfg := writeTemp(t, dir, "config.yaml", fmt.Sprintf(`current-context: test
contexts:
  - name: test
    server: %s
    token: %s
  - name: viewer
    server: %s
    token: %s
  - name: anonymous
    server: %s
`, url, adminTok, url, readTok, url))
	noKcctlEnv(t, cfg)

	code, out, errOut := kcctl(t, "cluster", "status", "-o", "json")
	if code != 0 || !strings.Contains(out, `"cluster_id"`) {
		t.Fatalf("with the context's token: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = kcctl(t, "--context", "anonymous", "cluster", "status")
	if code != exitAuth || !strings.Contains(errOut, "did not accept kcctl's credentials: none") {
		t.Fatalf("without credentials: exit %d, %q", code, errOut)
	}
	code, _, errOut = kcctl(t, "--context", "viewer", "worker", "weight", "w1", "2", "--force")
	if code != exitAuth || !strings.Contains(errOut, "role does not allow") || !strings.Contains(errOut, "context viewer") {
		t.Fatalf("a read user's write: exit %d, %q", code, errOut)
	}
	if strings.Contains(errOut, "kcd-canary-secret-") {
		t.Fatalf("a secret on stderr: %q", errOut)
	}
	// A flag beats the context.
	code, _, errOut = kcctl(t, "--token", "kcd-canary-secret-wrong", "cluster", "status")
	if code != exitAuth || !strings.Contains(errOut, "from flags") {
		t.Fatalf("a wrong --token: exit %d, %q", code, errOut)
	}
}

// selfSigned writes a self-signed certificate for cn and its key as PEM
// files under dir.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeTemp(t, dir, cn+".pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeTemp(t, dir, cn+".key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	cert, _ = x509.ParseCertificate(der)
	return certFile, keyFile, cert
}

// kcctl verifies an HTTPS server with --ca-file, and presents
// --client-cert under mutual TLS.
func TestKcctlTLS(t *testing.T) {
	noKcctlEnv(t, "")
	dir := t.TempDir()
	clientCert, clientKey, cc := selfSigned(t, dir, "kcctl-client")
	var gotCN string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) > 0 {
			gotCN = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"version":"9.9.9","commit":"x","go_version":"go","connect_api_version":"4.4.0"}`)
	}))
	pool := x509.NewCertPool()
	pool.AddCert(cc)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	ca := writeTemp(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))

	code, out, errOut := kcctl(t, "--server", srv.URL, "version", "-o", "json")
	if code != exitError || !strings.Contains(errOut, "certificate") || strings.Contains(out, "9.9.9") {
		t.Fatalf("without --ca-file: exit %d, %q %q (want the server's certificate refused)", code, out, errOut)
	}
	code, out, errOut = kcctl(t, "--server", srv.URL, "--ca-file", ca, "version", "-o", "json")
	if code != 0 || !strings.Contains(out, "9.9.9") || gotCN != "" {
		t.Fatalf("with --ca-file: exit %d, %q %q, client CN %q", code, out, errOut, gotCN)
	}
	code, out, errOut = kcctl(t, "--server", srv.URL, "--ca-file", ca, "--client-cert", clientCert, "--client-key", clientKey, "version", "-o", "json")
	if code != 0 || !strings.Contains(out, "9.9.9") || gotCN != "kcctl-client" {
		t.Fatalf("with --client-cert: exit %d, %q %q, client CN %q", code, out, errOut, gotCN)
	}
	if code, _, _ := kcctl(t, "--server", srv.URL, "--client-cert", clientCert, "version"); code != exitUsage {
		t.Fatalf("--client-cert without --client-key: exit %d, want %d", code, exitUsage)
	}
}
