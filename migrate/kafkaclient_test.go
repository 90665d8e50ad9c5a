package migrate

import (
	"bytes"
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"software.sslmate.com/src/go-pkcs12"
)

// secret is a password no error may show: none of secretPieces (cut at
// the quote and the backslash, which may break a config's parsing) either.
const secret = "Zq9-s3cr\"Xk7-et\\Wm4-pw"

var secretPieces = []string{"Zq9", "Xk7", "Wm4", "s3cr"}

func showsSecret(err error) bool {
	for _, p := range secretPieces {
		if strings.Contains(err.Error(), p) {
			return true
		}
	}
	return false
}

func TestParseProperties(t *testing.T) {
	in := "# a comment\n" +
		"! another comment\n" +
		"   \n" +
		"a=1\n" +
		"b : 2\n" +
		"c 3\n" +
		"  d=  four  \n" +
		"e=\n" +
		"f\n" +
		"g=x=y:z\n" +
		"key\\ with\\=odd\\:chars = v\n" +
		"h=first \\\n" +
		"     second \\\n" +
		"\t third\n" +
		"i=ends with two backslashes\\\\\n" +
		"j=not continued\n" +
		"k=tab\\there\\nnew\\rcr\\fff \\u0041\\u00e9 \\ud83d\\ude00 \\q\\\\\n" +
		"# a comment line ending in a backslash \\\n" +
		"l=after the comment\r\n" +
		"m=crlf\r\n" +
		"a=last wins\n" +
		"n=ü\n" +
		"o=continued at the end \\"
	got, err := ParseProperties([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a":                  "last wins",
		"b":                  "2",
		"c":                  "3",
		"d":                  "four  ",
		"e":                  "",
		"f":                  "",
		"g":                  "x=y:z",
		"key with=odd:chars": "v",
		"h":                  "first second third",
		"i":                  `ends with two backslashes\`,
		"j":                  "not continued",
		"k":                  "tab\there\nnew\rcr\fff Aé 😀 q\\",
		"l":                  "after the comment",
		"m":                  "crlf",
		"n":                  "ü",
		"o":                  "continued at the end ",
	}
	if len(got) != len(want) {
		t.Errorf("got %d properties, want %d: %q", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q = %q, want %q", k, got[k], v)
		}
	}
}

func TestParsePropertiesLatin1AndErrors(t *testing.T) {
	// Not UTF-8: read as ISO-8859-1, as Properties.load reads a stream.
	got, err := ParseProperties([]byte("p=caf\xe9\n"))
	if err != nil || got["p"] != "café" {
		t.Fatalf("latin-1: %q, %v", got["p"], err)
	}
	// A malformed \u escape: the error names the line and the key, not the value.
	_, err = ParseProperties([]byte("a=1\nsasl.password=" + "hunter2\\u12\n"))
	if err == nil {
		t.Fatal("malformed \\u escape accepted")
	}
	if !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "sasl.password") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %q: want line 2 and the key, without the value", err)
	}
	// LoadProperties: a missing file, and a real one.
	if _, err := LoadProperties(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file loaded")
	}
	file := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(file, []byte("security.protocol=SSL\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := LoadProperties(file); err != nil || p["security.protocol"] != "SSL" {
		t.Fatalf("LoadProperties: %v, %v", p, err)
	}
}

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in         string
		module     string
		user, pass string
		extra      map[string]string
	}{
		{in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`,
			module: "org.apache.kafka.common.security.plain.PlainLoginModule", user: "alice", pass: "alice-secret"},
		// Single quotes, escapes, line breaks and comments between options.
		{in: "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED\n  /* who */ username='bob'\n  // what\n  password=\"a \\\"quoted\\\" \\\\ \\t pass;word=\" tokenauth=true ;  ",
			module: "org.apache.kafka.common.security.scram.ScramLoginModule", user: "bob", pass: "a \"quoted\" \\ \t pass;word=",
			extra: map[string]string{"tokenauth": "true"}},
		// Unquoted words, octal escape.
		{in: `x.PlainLoginModule optional username=carol password="\101\60;";`, module: "x.PlainLoginModule", user: "carol", pass: "A0;"},
	} {
		e, err := parseJAAS(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if e.Module != tc.module || e.Options["username"] != tc.user || e.Options["password"] != tc.pass {
			t.Errorf("%q: got module %q user %q pass %q", tc.in, e.Module, e.Options["username"], e.Options["password"])
		}
		for k, v := range tc.extra {
			if e.Options[k] != v {
				t.Errorf("%q: option %s = %q, want %q", tc.in, k, e.Options[k], v)
			}
		}
	}
}

func TestParseJAASErrorsHideValues(t *testing.T) {
	const m = "org.apache.kafka.common.security.plain.PlainLoginModule"
	const good = "Zq9-Xk7-Wm4" // parses as one quoted value
	for _, tc := range []struct{ in, want string }{
		{m + ` required username="u" password="` + good, "option password: unterminated"},
		{m + ` required username="u" password="` + good + `"`, "missing ';'"},
		{m + ` required username="u" password "` + good + `";`, "option password: expected '='"},
		{m + ` mandatory username="u" password="` + good + `";`, "control flag"},
		{m + ` required username="u" password=;`, "value missing"},
		{m + ` required password="` + good + `"; ` + m + ` required;`, "more than one login module"},
		{`"` + good + `"`, "login module class"},
		{m + ` required /* username="u" password="` + good + `";`, "unterminated /* comment"},
		{"", "login module class"},
		// An unescaped quote or backslash in the password: the rest of
		// it reads as option names, which errors must not show.
		{m + ` required username="u" password="` + secret + `";`, "expected '='"},
		{m + ` required username="u" password=` + secret + `;`, "unterminated"},
	} {
		_, err := parseJAAS(tc.in)
		if err == nil {
			t.Errorf("%q: no error", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %q, want %q", tc.in, err, tc.want)
		}
		if showsSecret(err) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

// newClient builds a client from cfg (it does not connect) so that the
// options it got can be read back.
func newClient(t *testing.T, cfg ClientConfig) *kgo.Client {
	t.Helper()
	cl, err := cfg.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// saslOf returns the mechanism the client authenticates with and its first
// message, which names the user (and for PLAIN holds the password).
func saslOf(t *testing.T, cl *kgo.Client) (string, string) {
	t.Helper()
	ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(ms) == 0 {
		return "", ""
	}
	if len(ms) != 1 {
		t.Fatalf("%d SASL mechanisms", len(ms))
	}
	_, first, err := ms[0].Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	return ms[0].Name(), string(first)
}

func tlsOf(cl *kgo.Client) *tls.Config {
	c, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	return c
}

func TestOptionsProtocolsAndMechanisms(t *testing.T) {
	caFile, _, _ := writeTestPKI(t)
	plainJAAS := jaas("plain.PlainLoginModule", "alice", secret)
	scramJAAS := jaas("scram.ScramLoginModule", "alice", secret)
	for _, tc := range []struct {
		protocol, mechanism, jaas string
		wantTLS                   bool
		wantMech                  string
	}{
		{protocol: "", wantTLS: false},
		{protocol: "PLAINTEXT", wantTLS: false},
		{protocol: "ssl", wantTLS: true},
		{protocol: "SASL_PLAINTEXT", mechanism: "PLAIN", jaas: plainJAAS, wantMech: "PLAIN"},
		{protocol: "SASL_PLAINTEXT", mechanism: "SCRAM-SHA-256", jaas: scramJAAS, wantMech: "SCRAM-SHA-256"},
		{protocol: "SASL_PLAINTEXT", mechanism: "SCRAM-SHA-512", jaas: scramJAAS, wantMech: "SCRAM-SHA-512"},
		{protocol: "SASL_SSL", mechanism: "PLAIN", jaas: plainJAAS, wantTLS: true, wantMech: "PLAIN"},
		{protocol: "SASL_SSL", mechanism: "SCRAM-SHA-256", jaas: scramJAAS, wantTLS: true, wantMech: "SCRAM-SHA-256"},
		{protocol: "SASL_SSL", mechanism: "scram-sha-512", jaas: scramJAAS, wantTLS: true, wantMech: "SCRAM-SHA-512"},
		// SASL settings do not matter to a protocol without SASL, as in Kafka.
		{protocol: "SSL", mechanism: "GSSAPI", wantTLS: true},
	} {
		props := map[string]string{
			"security.protocol": tc.protocol, "sasl.mechanism": tc.mechanism, "sasl.jaas.config": tc.jaas,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": caFile,
			"client.id": "kcctl-test", "request.timeout.ms": "5000", "some.other.property": "ignored",
		}
		cl := newClient(t, ClientConfig{BootstrapServers: []string{"127.0.0.1:1", " "}, Properties: props})
		if got := tlsOf(cl) != nil; got != tc.wantTLS {
			t.Errorf("%s/%s: TLS %v, want %v", tc.protocol, tc.mechanism, got, tc.wantTLS)
		}
		mech, first := saslOf(t, cl)
		if mech != tc.wantMech {
			t.Errorf("%s/%s: SASL %q, want %q", tc.protocol, tc.mechanism, mech, tc.wantMech)
		}
		switch {
		case mech == "PLAIN" && first != "\x00alice\x00"+secret:
			t.Errorf("PLAIN sends %q", first)
		case strings.HasPrefix(mech, "SCRAM") && !strings.HasPrefix(first, "n,,n=alice,r="):
			t.Errorf("%s sends %q", mech, first)
		}
		if id, _ := cl.OptValue(kgo.ClientID).(string); id != "kcctl-test" {
			t.Errorf("client id %q", id)
		}
	}
}

func TestOptionsErrorsNameThePropertyNotTheSecret(t *testing.T) {
	base := func(kv ...string) map[string]string {
		p := map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": jaas("plain.PlainLoginModule", "alice", secret)}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{base("security.protocol", "SASL_TLS"), "security.protocol"},
		{base("sasl.mechanism", "GSSAPI"), `sasl.mechanism: "GSSAPI" is not supported`},
		{base("sasl.mechanism", "OAUTHBEARER"), `sasl.mechanism: "OAUTHBEARER" is not supported`},
		{base("sasl.mechanism", ""), "GSSAPI (Kerberos) is not supported"},
		{base("sasl.mechanism", "SCRAM-SHA-512"), "does not go with sasl.mechanism SCRAM-SHA-512"},
		{base("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="`+secret), "sasl.jaas.config: login module org.apache.kafka.common.security.plain.PlainLoginModule: the option at character"},
		{base("sasl.jaas.config", ""), "needs a user name"},
		{base("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice";`), "needs a password"},
		{base("sasl.login.callback.handler.class", "com.example.Handler"), "sasl.login.callback.handler.class: names a Java class"},
		{base("request.timeout.ms", "soon"), "request.timeout.ms"},
		{base("security.protocol", "SSL", "ssl.truststore.location", "/nonexistent/truststore.pem"), "ssl.truststore.location"},
		{base("security.protocol", "SSL", "ssl.endpoint.identification.algorithm", "ldap"), "ssl.endpoint.identification.algorithm"},
		{base("security.protocol", "SSL", "ssl.enabled.protocols", "SSLv3"), "ssl.enabled.protocols"},
		{base("security.protocol", "SSL", "ssl.cipher.suites", "TLS_NULL_WITH_NULL_NULL"), "ssl.cipher.suites"},
		{base("security.protocol", "SSL", "ssl.engine.factory.class", "x.Y"), "ssl.engine.factory.class"},
		{base("security.protocol", "SSL", "ssl.keystore.key", "-----BEGIN PRIVATE KEY-----\n"+secret+"\n-----END PRIVATE KEY-----"), "go together"},
	} {
		_, err := ClientConfig{BootstrapServers: []string{"127.0.0.1:1"}, Properties: tc.props}.Options()
		if err == nil {
			t.Errorf("%v: no error", tc.props)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q, want %q", err, tc.want)
		}
		if showsSecret(err) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
	if _, err := (ClientConfig{}).Options(); err == nil {
		t.Error("no bootstrap servers accepted")
	}
}

// newCA makes a self-signed CA.
func newCA(t *testing.T, name string) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// newLeaf makes a certificate for names signed by ca.
func newLeaf(t *testing.T, ca *x509.Certificate, caKey crypto.Signer, names []string, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(t *testing.T, k crypto.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// encryptPKCS8 encrypts a key as openssl pkcs8 -topk8 -v2 aes-256-cbc does
// (PBES2, PBKDF2 with HMAC-SHA256, AES-256-CBC).
func encryptPKCS8(t *testing.T, k crypto.PrivateKey, password string) []byte {
	t.Helper()
	plain, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(plain)%16
	plain = append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	mustDER := func(v any) []byte {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kdf := mustDER(pbkdf2Params{Salt: salt, Iterations: 2048, PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
	scheme := pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: asn1.RawValue{FullBytes: mustDER(iv)}}
	params := mustDER(pbes2Params{KDF: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: kdf}}, Scheme: scheme})
	der := mustDER(encryptedPrivateKeyInfo{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}}, Data: enc})
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA.
type testPKI struct {
	ca                   *x509.Certificate
	caKey                crypto.Signer
	server, client       *x509.Certificate
	serverKey, clientKey *ecdsa.PrivateKey
	dir                  string
}

func newTestPKI(t *testing.T) *testPKI {
	p := &testPKI{dir: t.TempDir()}
	p.ca, p.caKey = newCA(t, "kcd test CA")
	p.server, p.serverKey = newLeaf(t, p.ca, p.caKey, []string{"127.0.0.1", "localhost"}, x509.ExtKeyUsageServerAuth)
	p.client, p.clientKey = newLeaf(t, p.ca, p.caKey, []string{"kcctl"}, x509.ExtKeyUsageClientAuth)
	return p
}

func (p *testPKI) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	f := filepath.Join(p.dir, name)
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeTestPKI(t *testing.T) (caFile string, p *testPKI, _ struct{}) {
	p = newTestPKI(t)
	return p.write(t, "ca.pem", certPEM(p.ca)), p, struct{}{}
}

// serveTLS runs a TLS server for p's server certificate that requires a
// client certificate signed by p's CA when requireClient, and answers each
// handshake; it returns its address.
func serveTLS(t *testing.T, cert *x509.Certificate, key crypto.PrivateKey, clientCA *x509.Certificate) string {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}}
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// handshake dials addr with the TLS settings props give, as franz-go does
// (ServerName is the host dialed unless set), and reads the server's "ok".
func handshake(t *testing.T, addr string, props map[string]string, serverName string) error {
	t.Helper()
	props["security.protocol"] = "SSL"
	cl := newClient(t, ClientConfig{BootstrapServers: []string{addr}, Properties: props, TLSServerName: serverName})
	cfg := tlsOf(cl).Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return ExplainError(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	return nil
}

func TestTLSStoresPEMAndPKCS12(t *testing.T) {
	caFile, p, _ := writeTestPKI(t)
	addr := serveTLS(t, p.server, p.serverKey, p.ca)

	clientPEM := append(keyPEM(t, p.clientKey), certPEM(p.client)...)
	encKey := encryptPKCS8(t, p.clientKey, "key-pass")
	p12Key, err := pkcs12.Modern.Encode(p.clientKey, p.client, []*x509.Certificate{p.ca}, "store-pass")
	if err != nil {
		t.Fatal(err)
	}
	p12Trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, "trust-pass")
	if err != nil {
		t.Fatal(err)
	}
	// A PEM value continued over lines in a properties file loses its
	// line breaks: Kafka reads it all the same, and so must we.
	propsFile := p.write(t, "client.properties", []byte(
		"ssl.truststore.type=PEM\n"+
			"ssl.truststore.certificates="+strings.ReplaceAll(strings.TrimSpace(string(certPEM(p.ca))), "\n", " \\\n  ")+"\n"+
			"ssl.keystore.type=PEM\n"+
			"ssl.keystore.certificate.chain="+strings.ReplaceAll(strings.TrimSpace(string(certPEM(p.client))), "\n", "\\\n")+"\n"+
			"ssl.keystore.key="+strings.ReplaceAll(strings.TrimSpace(string(encKey)), "\n", "\\n\\\n")+"\n"+
			"ssl.key.password=key-pass\n"))
	textProps, err := LoadProperties(propsFile)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"PEM files", map[string]string{
			"ssl.truststore.type": "PEM", "ssl.truststore.location": caFile,
			"ssl.keystore.type": "PEM", "ssl.keystore.location": p.write(t, "client.pem", clientPEM),
		}},
		{"PEM files, type left out, encrypted key", map[string]string{
			"ssl.truststore.location": caFile,
			"ssl.keystore.location":   p.write(t, "client-enc.pem", append(encKey, certPEM(p.client)...)),
			"ssl.key.password":        "key-pass",
		}},
		{"PEM text in a properties file", textProps},
		{"PKCS12", map[string]string{
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.write(t, "trust.p12", p12Trust), "ssl.truststore.password": "trust-pass",
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.write(t, "client.p12", p12Key), "ssl.keystore.password": "store-pass",
		}},
		// Java's JKS type reads PKCS12 files; a Kafka config that leaves
		// the type at its default JKS with a .p12 file works.
		{"PKCS12 files under the default type JKS", map[string]string{
			"ssl.truststore.type": "JKS", "ssl.truststore.location": p.write(t, "trust2.p12", p12Trust), "ssl.truststore.password": "trust-pass",
			"ssl.keystore.location": p.write(t, "client2.p12", p12Key), "ssl.keystore.password": "store-pass",
		}},
	} {
		if err := handshake(t, addr, tc.props, ""); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	// Without a client certificate the server refuses the handshake: the
	// successes above did present the keystore's.
	if err := handshake(t, addr, map[string]string{"ssl.truststore.location": caFile}, ""); err == nil {
		t.Error("handshake without a client certificate passed a server that requires one")
	}
}

func TestTLSVerification(t *testing.T) {
	caFile, p, _ := writeTestPKI(t)
	addr := serveTLS(t, p.server, p.serverKey, nil)
	other, otherKey := newCA(t, "another CA")
	otherFile := p.write(t, "other.pem", certPEM(other))
	// A server whose certificate does not name 127.0.0.1.
	named, namedKey := newLeaf(t, p.ca, p.caKey, []string{"broker.example"}, x509.ExtKeyUsageServerAuth)
	namedAddr := serveTLS(t, named, namedKey, nil)
	_ = otherKey

	if err := handshake(t, addr, map[string]string{"ssl.truststore.location": caFile}, ""); err != nil {
		t.Fatalf("trusted CA: %v", err)
	}
	for _, hostCheck := range []string{"https", ""} {
		err := handshake(t, addr, map[string]string{"ssl.truststore.location": otherFile, "ssl.endpoint.identification.algorithm": hostCheck}, "")
		if err == nil || !strings.Contains(err.Error(), "certificate is not trusted") {
			t.Errorf("untrusted CA, identification %q: %v", hostCheck, err)
		}
	}
	// The system's roots do not know the test CA either.
	if err := handshake(t, addr, map[string]string{}, ""); err == nil {
		t.Error("a test CA's certificate passed against the system's roots")
	}
	err := handshake(t, namedAddr, map[string]string{"ssl.truststore.location": caFile}, "")
	if err == nil || !strings.Contains(err.Error(), "not valid for the host") {
		t.Errorf("wrong host: %v", err)
	}
	if err := handshake(t, namedAddr, map[string]string{"ssl.truststore.location": caFile}, "broker.example"); err != nil {
		t.Errorf("TLSServerName: %v", err)
	}
	if err := handshake(t, namedAddr, map[string]string{"ssl.truststore.location": caFile, "ssl.endpoint.identification.algorithm": ""}, ""); err != nil {
		t.Errorf("identification off: %v", err)
	}
}

func TestStoreErrors(t *testing.T) {
	_, p, _ := writeTestPKI(t)
	jks := p.write(t, "store.jks", append([]byte{0xFE, 0xED, 0xFE, 0xED, 0, 0, 0, 2}, bytes.Repeat([]byte{1}, 64)...))
	p12Key, err := pkcs12.Modern.Encode(p.clientKey, p.client, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	p12 := p.write(t, "client.p12", p12Key)
	enc := p.write(t, "enc.pem", append(encryptPKCS8(t, p.clientKey, secret), certPEM(p.client)...))
	_, other := newLeaf(t, p.ca, p.caKey, []string{"x"}, x509.ExtKeyUsageClientAuth)
	mismatch := p.write(t, "mismatch.pem", append(keyPEM(t, other), certPEM(p.client)...))
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"ssl.truststore.location": jks}, "keytool -importkeystore"},
		{map[string]string{"ssl.truststore.location": jks, "ssl.truststore.type": "JKS"}, "deststoretype PKCS12"},
		{map[string]string{"ssl.keystore.location": jks, "ssl.keystore.password": secret}, "keytool -importkeystore"},
		{map[string]string{"ssl.keystore.location": p12, "ssl.keystore.password": "wrong-" + secret}, "ssl.keystore.password"},
		{map[string]string{"ssl.keystore.location": enc, "ssl.key.password": "wrong-" + secret}, "wrong ssl.key.password"},
		{map[string]string{"ssl.keystore.location": enc}, "set ssl.key.password"},
		{map[string]string{"ssl.keystore.location": mismatch}, "does not match"},
		{map[string]string{"ssl.truststore.location": p12, "ssl.truststore.type": "PEM"}, "no PEM block"},
		{map[string]string{"ssl.truststore.location": enc, "ssl.truststore.type": "BCFKS"}, "not supported"},
		{map[string]string{"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----"}, "not valid base64"},
	} {
		tc.props["security.protocol"] = "SSL"
		_, err := ClientConfig{BootstrapServers: []string{"127.0.0.1:1"}, Properties: tc.props}.Options()
		if err == nil {
			t.Errorf("%v: no error", tc.props)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %q, want %q", err, tc.want)
		}
		if showsSecret(err) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

// flagConfig parses kcctl's Kafka flags.
func flagConfig(t *testing.T, args ...string) ClientConfig {
	t.Helper()
	fs := pflag.NewFlagSet("kcctl", pflag.ContinueOnError)
	f := AddKafkaFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestKafkaFlags(t *testing.T) {
	caFile, p, _ := writeTestPKI(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Setenv(EnvSASLPassword, "")

	// The properties file alone.
	props := write("client.properties", "bootstrap.servers=ignored:1\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config="+jaas("scram.ScramLoginModule", "file-user", "file-pass")+"\nssl.truststore.location="+caFile+"\n")
	cfg := flagConfig(t, "--bootstrap-servers", "a:9092,b:9092", "--command-config", props)
	if strings.Join(cfg.BootstrapServers, ",") != "a:9092,b:9092" {
		t.Errorf("bootstrap servers %v", cfg.BootstrapServers)
	}
	cl := newClient(t, cfg)
	if mech, first := saslOf(t, cl); mech != "SCRAM-SHA-512" || !strings.HasPrefix(first, "n,,n=file-user,") {
		t.Errorf("file: %s %q", mech, first)
	}

	// Flags win over the file; the password from a file, its line end dropped.
	pw := write("password", "flag-pass\r\nsecond line\n")
	cfg = flagConfig(t, "--bootstrap-servers", "a:9092", "--command-config", props,
		"--sasl-mechanism", "PLAIN", "--sasl-username", "flag-user", "--sasl-password-file", pw)
	if mech, first := saslOf(t, newClient(t, cfg)); mech != "PLAIN" || first != "\x00flag-user\x00flag-pass" {
		t.Errorf("flags over file: %s %q", mech, first)
	}
	// The password from the environment.
	t.Setenv(EnvSASLPassword, "env-pass")
	cfg = flagConfig(t, "--bootstrap-servers", "a:9092", "--sasl-mechanism", "PLAIN", "--sasl-username", "env-user")
	if cfg.Properties["security.protocol"] != "SASL_PLAINTEXT" {
		t.Errorf("--sasl-mechanism alone implies %q", cfg.Properties["security.protocol"])
	}
	if mech, first := saslOf(t, newClient(t, cfg)); mech != "PLAIN" || first != "\x00env-user\x00env-pass" {
		t.Errorf("env: %s %q", mech, first)
	}
	t.Setenv(EnvSASLPassword, "")

	// TLS flags imply SSL, SASL_SSL with a mechanism.
	cert := write("client.crt", string(certPEM(p.client)))
	key := write("client.key", string(keyPEM(t, p.clientKey)))
	cfg = flagConfig(t, "--bootstrap-servers", "a:9092", "--tls-ca", caFile, "--tls-cert", cert, "--tls-key", key, "--tls-server-name", "broker.example")
	if cfg.Properties["security.protocol"] != "SSL" {
		t.Errorf("TLS flags imply %q", cfg.Properties["security.protocol"])
	}
	tc := tlsOf(newClient(t, cfg))
	if tc == nil || len(tc.Certificates) != 1 || tc.ServerName != "broker.example" || tc.RootCAs == nil {
		t.Errorf("TLS config from flags: %+v", tc)
	}
	cfg = flagConfig(t, "--bootstrap-servers", "a:9092", "--tls-ca", caFile, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "u", "--sasl-password-file", pw)
	if cfg.Properties["security.protocol"] != "SASL_SSL" {
		t.Errorf("TLS and SASL flags imply %q", cfg.Properties["security.protocol"])
	}
	// An explicit protocol wins.
	cfg = flagConfig(t, "--bootstrap-servers", "a:9092", "--command-config", props, "--security-protocol", "PLAINTEXT")
	if cl := newClient(t, cfg); tlsOf(cl) != nil {
		t.Error("--security-protocol PLAINTEXT still dials TLS")
	}

	// Errors.
	for _, args := range [][]string{
		{},
		{"--bootstrap-servers", "a:1", "--tls-cert", cert},
		{"--bootstrap-servers", "a:1", "--sasl-password-file", filepath.Join(dir, "missing")},
		{"--bootstrap-servers", "a:1", "--sasl-password-file", write("empty", "\n")},
		{"--bootstrap-servers", "a:1", "--command-config", filepath.Join(dir, "missing")},
	} {
		fs := pflag.NewFlagSet("kcctl", pflag.ContinueOnError)
		f := AddKafkaFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ClientConfig(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	// No flag takes a password.
	fs := pflag.NewFlagSet("kcctl", pflag.ContinueOnError)
	AddKafkaFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.Contains(f.Name, "password") && !strings.HasSuffix(f.Name, "-file") {
			t.Errorf("flag --%s takes a password on the command line", f.Name)
		}
	})
}

// TestDecryptOpenSSLKeys decrypts keys that openssl encrypted (files in
// testdata/kafkatls, made with openssl pkcs8 -topk8 from plain.key with the
// password kcd-pbe-pass): -v1 PBE-SHA1-3DES, what Java and so Kafka read;
// -v2 aes-256-cbc and -v2 des3, openssl's PBES2.
func TestDecryptOpenSSLKeys(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "kafkatls", name))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := pemBlocks(name, string(b))
		if err != nil {
			t.Fatal(err)
		}
		return blocks[0].Bytes
	}
	want := read("plain.key")
	for _, name := range []string{"pbe-sha1-3des.key", "pbes2-aes256.key", "pbes2-des3.key"} {
		got, err := decryptPKCS8(read(name), "kcd-pbe-pass")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: decrypted key differs from plain.key", name)
		}
		if _, err := decryptPKCS8(read(name), "wrong-pass"); err == nil {
			t.Errorf("%s: decrypted with a wrong password", name)
		}
	}
}

// javaEscape escapes s as Properties.store writes a key (every blank) or a
// value (a leading blank), with \uXXXX for characters outside ASCII.
func javaEscape(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case strings.ContainsRune(`=:#!\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzPropertiesRoundTrip: what Java's Properties.store writes,
// ParseProperties reads back unchanged.
func FuzzPropertiesRoundTrip(f *testing.F) {
	f.Add("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`)
	f.Add("key with spaces=and:colons", "  leading blanks, trailing \\ backslash\\")
	f.Add("ü", "line\nbreak\ttab 😀 #!")
	f.Fuzz(func(t *testing.T, k, v string) {
		if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) || strings.ContainsRune(k+v, utf8.RuneError) {
			return
		}
		got, err := ParseProperties([]byte("# comment\n" + javaEscape(k, true) + "=" + javaEscape(v, false) + "\n"))
		if err != nil {
			t.Fatalf("%q=%q: %v", k, v, err)
		}
		if len(got) != 1 || got[k] != v {
			t.Fatalf("%q=%q: read back %q", k, v, got)
		}
	})
}

// FuzzJAASRoundTrip: a password quoted with its quotes and backslashes
// escaped is read back unchanged.
func FuzzJAASRoundTrip(f *testing.F) {
	f.Add("alice", secret)
	f.Add("bob", `/* not a comment */ // nor this; "quoted" 'single' \n`)
	f.Fuzz(func(t *testing.T, user, pass string) {
		if strings.ContainsAny(user+pass, "\r\n") {
			return // a quoted string ends at a line break, as in Java
		}
		e, err := parseJAAS(jaas("scram.ScramLoginModule", user, pass))
		if err != nil {
			t.Fatalf("%q/%q: %v", user, pass, err)
		}
		if e.Options["username"] != user || e.Options["password"] != pass {
			t.Fatalf("%q/%q: read back %q/%q", user, pass, e.Options["username"], e.Options["password"])
		}
	})
}

func TestPingUnreachableBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = ClientConfig{BootstrapServers: []string{addr}}.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the broker") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Ping of a closed port: %v", err)
	}
}
