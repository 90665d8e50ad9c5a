package migrate

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// maxStoreSize bounds a truststore or keystore file.
const maxStoreSize = 4 << 20

// Magic numbers of Java's own keystore formats, which only Java reads.
var (
	jksMagic   = []byte{0xFE, 0xED, 0xFE, 0xED}
	jceksMagic = []byte{0xCE, 0xCE, 0xCE, 0xCE}
)

// tlsConfig builds the TLS settings of an SSL or SASL_SSL client from the
// ssl.* properties, as a Kafka client reads them.
func tlsConfig(p map[string]string, serverName string) (*tls.Config, error) {
	for _, k := range []string{"ssl.engine.factory.class", "ssl.provider", "security.providers"} {
		if p[k] != "" {
			return nil, fmt.Errorf("%s: names a Java class or provider, which kcctl cannot load; remove it", k)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if err := tlsVersions(cfg, p); err != nil {
		return nil, err
	}
	if err := tlsCipherSuites(cfg, p); err != nil {
		return nil, err
	}
	roots, err := trustStore(p)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots // nil: the system's roots, as a Java client uses the JDK's
	cert, err := keyStore(p)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	alg, set := p["ssl.endpoint.identification.algorithm"]
	switch {
	case !set || strings.EqualFold(alg, "https"):
	case alg == "":
		// The chain is still verified, only the host name is not.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm: %q is not supported (want https, or empty to skip the host name check)", alg)
	}
	return cfg, nil
}

func tlsVersions(cfg *tls.Config, p map[string]string) error {
	v := strings.TrimSpace(p["ssl.enabled.protocols"])
	if v == "" {
		return nil
	}
	versions := map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}
	var lo, hi uint16
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		ver, ok := versions[name]
		if !ok {
			return fmt.Errorf("ssl.enabled.protocols: %q is not supported (want TLSv1.2, TLSv1.3)", name)
		}
		if lo == 0 || ver < lo {
			lo = ver
		}
		if ver > hi {
			hi = ver
		}
	}
	if lo != 0 {
		cfg.MinVersion, cfg.MaxVersion = lo, hi
	}
	return nil
}

func tlsCipherSuites(cfg *tls.Config, p map[string]string) error {
	v := strings.TrimSpace(p["ssl.cipher.suites"])
	if v == "" {
		return nil
	}
	byName := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		id, ok := byName[name]
		if !ok {
			return fmt.Errorf("ssl.cipher.suites: %q is not a cipher suite kcctl supports", name)
		}
		// TLS 1.3 suites are not configurable in Go: all are enabled.
		if id != tls.TLS_AES_128_GCM_SHA256 && id != tls.TLS_AES_256_GCM_SHA384 && id != tls.TLS_CHACHA20_POLY1305_SHA256 {
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	return nil
}

// storeFormat tells what a store's bytes are: PEM, PKCS12, or Java's own
// JKS/JCEKS, which are refused. typ is the *.type property; as Java's JKS
// type reads PKCS12 files too, a JKS type with PKCS12 content is PKCS12.
func storeFormat(prop, typ string, data []byte) (string, error) {
	typ = strings.ToUpper(strings.TrimSpace(typ))
	isJava := bytes.HasPrefix(data, jksMagic) || bytes.HasPrefix(data, jceksMagic)
	isPEM := bytes.Contains(data, []byte("-----BEGIN"))
	switch {
	case isJava:
		return "", fmt.Errorf("%s: a Java keystore (JKS or JCEKS), which only Java reads; convert it to PKCS12: keytool -importkeystore -srckeystore FILE -destkeystore FILE.p12 -deststoretype PKCS12, and set the type to PKCS12", prop)
	case typ == "PEM" || (typ == "" && isPEM):
		if !isPEM {
			return "", fmt.Errorf("%s: type PEM, but the file holds no PEM block", prop)
		}
		return "PEM", nil
	case typ == "PKCS12" || typ == "JKS" || typ == "":
		if isPEM {
			return "", fmt.Errorf("%s: the file is PEM; set its type to PEM", prop)
		}
		return "PKCS12", nil
	default:
		return "", fmt.Errorf("%s: type %q is not supported (want PEM or PKCS12)", prop, typ)
	}
}

// loadStore reads the store file at path (property prop) and tells its
// format (storeFormat).
func loadStore(prop, path, typ string) (data []byte, format string, err error) {
	if data, err = readStore(prop, path); err != nil {
		return nil, "", err
	}
	format, err = storeFormat(prop, typ, data)
	return data, format, err
}

func readStore(prop, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prop, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoreSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prop, err)
	}
	if len(b) > maxStoreSize {
		return nil, fmt.Errorf("%s: %s is larger than %d bytes", prop, path, maxStoreSize)
	}
	return b, nil
}

// trustStore returns the CA certificates of ssl.truststore.location or
// ssl.truststore.certificates, or nil when neither is set.
func trustStore(p map[string]string) (*x509.CertPool, error) {
	loc, text := p["ssl.truststore.location"], p["ssl.truststore.certificates"]
	typ := p["ssl.truststore.type"]
	var certs []*x509.Certificate
	switch {
	case loc != "" && text != "":
		return nil, errors.New("ssl.truststore.location and ssl.truststore.certificates are both set; set one")
	case text != "":
		if t := strings.ToUpper(strings.TrimSpace(typ)); t != "" && t != "PEM" {
			return nil, fmt.Errorf("ssl.truststore.certificates: needs ssl.truststore.type PEM, not %s", typ)
		}
		c, err := pemCertificates("ssl.truststore.certificates", text)
		if err != nil {
			return nil, err
		}
		certs = c
	case loc != "":
		const prop = "ssl.truststore.location"
		data, format, err := loadStore(prop, loc, typ)
		if err != nil {
			return nil, err
		}
		if format == "PEM" {
			if p["ssl.truststore.password"] != "" {
				return nil, errors.New("ssl.truststore.password: a PEM truststore takes no password; remove it")
			}
			if certs, err = pemCertificates(prop, string(data)); err != nil {
				return nil, err
			}
		} else {
			certs, err = pkcs12.DecodeTrustStore(data, p["ssl.truststore.password"])
			if err != nil {
				return nil, fmt.Errorf("%s: reading PKCS12 truststore %s: %w (a wrong ssl.truststore.password, or certificates not marked as trusted, as keytool -importcert marks them)", prop, loc, err)
			}
		}
	default:
		return nil, nil
	}
	if len(certs) == 0 {
		return nil, errors.New("the truststore holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// keyStore returns the client certificate of ssl.keystore.location or
// ssl.keystore.certificate.chain with ssl.keystore.key, or nil.
func keyStore(p map[string]string) (*tls.Certificate, error) {
	loc, chain, key := p["ssl.keystore.location"], p["ssl.keystore.certificate.chain"], p["ssl.keystore.key"]
	typ := p["ssl.keystore.type"]
	keyPass, keyPassSet := p["ssl.key.password"]
	switch {
	case loc != "" && (chain != "" || key != ""):
		return nil, errors.New("ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key are both set; set one")
	case chain != "" || key != "":
		if chain == "" || key == "" {
			return nil, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key go together; set both")
		}
		if t := strings.ToUpper(strings.TrimSpace(typ)); t != "" && t != "PEM" {
			return nil, fmt.Errorf("ssl.keystore.key: needs ssl.keystore.type PEM, not %s", typ)
		}
		return pemKeyPair("ssl.keystore.certificate.chain", chain, "ssl.keystore.key", key, keyPass, keyPassSet)
	case loc != "":
		const prop = "ssl.keystore.location"
		data, format, err := loadStore(prop, loc, typ)
		if err != nil {
			return nil, err
		}
		if format == "PEM" {
			return pemKeyPair(prop, string(data), prop, string(data), keyPass, keyPassSet)
		}
		storePass := p["ssl.keystore.password"]
		k, leaf, cas, err := pkcs12.DecodeChain(data, storePass)
		if err != nil && keyPassSet && keyPass != storePass {
			k, leaf, cas, err = pkcs12.DecodeChain(data, keyPass)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading PKCS12 keystore %s: %w (a wrong ssl.keystore.password, or not exactly one private key in it)", prop, loc, err)
		}
		c := &tls.Certificate{PrivateKey: k, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
		for _, ca := range cas {
			c.Certificate = append(c.Certificate, ca.Raw)
		}
		if err := checkKeyMatches(prop, leaf, k); err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, nil
}

// pemBlock is one block of PEM text.
type pemBlock struct {
	Type  string
	Bytes []byte
}

// pemRE finds PEM blocks even when line breaks were lost, as they are when
// a properties file continues a PEM value over lines with backslashes
// (Kafka's own PEM reader is as lenient).
var pemRE = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([^-]*)-----END ([A-Z0-9 ]+)-----`)

// pemBlocks returns the PEM blocks of text. Errors name prop, never the
// content, which may be a private key.
func pemBlocks(prop, text string) ([]pemBlock, error) {
	var out []pemBlock
	for _, m := range pemRE.FindAllStringSubmatch(text, -1) {
		if m[1] != m[3] {
			return nil, fmt.Errorf("%s: PEM block BEGIN %s ends with END %s", prop, m[1], m[3])
		}
		body := m[2]
		if strings.Contains(body, ":") {
			return nil, fmt.Errorf("%s: PEM block %s has headers (an OpenSSL legacy encrypted key?); use PKCS#8: openssl pkcs8 -topk8 -in KEY -out KEY.p8", prop, m[1])
		}
		body = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
				return -1
			}
			return r
		}, body)
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("%s: PEM block %s is not valid base64", prop, m[1])
		}
		out = append(out, pemBlock{Type: m[1], Bytes: b})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM block found", prop)
	}
	return out, nil
}

func pemCertificates(prop, text string) ([]*x509.Certificate, error) {
	blocks, err := pemBlocks(prop, text)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", prop, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no CERTIFICATE block found", prop)
	}
	return certs, nil
}

// pemKeyPair reads a certificate chain and a private key (PKCS#8, possibly
// encrypted with the key password; PKCS#1 and SEC 1 too) from PEM text.
func pemKeyPair(chainProp, chainText, keyProp, keyText, keyPass string, keyPassSet bool) (*tls.Certificate, error) {
	certs, err := pemCertificates(chainProp, chainText)
	if err != nil {
		return nil, err
	}
	blocks, err := pemBlocks(keyProp, keyText)
	if err != nil {
		return nil, err
	}
	var key crypto.PrivateKey
	for _, b := range blocks {
		var k any
		switch b.Type {
		case "CERTIFICATE":
			continue
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			if !keyPassSet {
				return nil, fmt.Errorf("%s: the private key is encrypted; set ssl.key.password", keyProp)
			}
			var der []byte
			if der, err = decryptPKCS8(b.Bytes, keyPass); err != nil {
				return nil, fmt.Errorf("%s: %w", keyProp, err)
			}
			k, err = x509.ParsePKCS8PrivateKey(der)
		default:
			return nil, fmt.Errorf("%s: unexpected PEM block %s", keyProp, b.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading the private key: %w", keyProp, err)
		}
		if key != nil {
			return nil, fmt.Errorf("%s: more than one private key", keyProp)
		}
		key = k
	}
	if key == nil {
		return nil, fmt.Errorf("%s: no private key found", keyProp)
	}
	if err := checkKeyMatches(keyProp, certs[0], key); err != nil {
		return nil, err
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, cert := range certs {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

func checkKeyMatches(prop string, leaf *x509.Certificate, key crypto.PrivateKey) error {
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return fmt.Errorf("%s: unsupported private key type %T", prop, key)
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !eq.Equal(leaf.PublicKey) {
		return fmt.Errorf("%s: the private key does not match the certificate (subject %s)", prop, leaf.Subject)
	}
	return nil
}

// PBES2 (RFC 8018), what openssl pkcs8 -topk8 writes by default, and the
// PKCS#12 PBE with SHA-1 and 3DES (RFC 7292), what Java reads in a PEM key
// (Java has no PBES2 SecretKeyFactory: keys for Kafka are made with
// openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES).
var (
	oidPBESHA13DES = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
	oidPBESHA12DES = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 4}
	oidPBES2       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1    = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC  = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 decrypts a PBES2-encrypted PKCS#8 private key.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) != 0 {
		return nil, errors.New("the encrypted private key is malformed")
	}
	if alg := info.Algorithm.Algorithm; alg.Equal(oidPBESHA13DES) || alg.Equal(oidPBESHA12DES) {
		return decryptPKCS12PBE(info, password)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("the private key is encrypted with %v; supported: PBES2 and PBE-SHA1-3DES", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("the encrypted private key's PBES2 parameters are malformed")
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("the private key's key derivation %v is not supported (want PBKDF2)", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("the encrypted private key's PBKDF2 parameters are malformed")
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the private key's PBKDF2 iteration count %d is out of range", kdf.Iterations)
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0 || alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA224):
		prf = sha256.New224
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA384):
		prf = sha512.New384
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("the private key's PBKDF2 PRF %v is not supported", alg)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch alg := params.Scheme.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case alg.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case alg.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case alg.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("the private key's cipher %v is not supported (want AES-CBC or DES-EDE3-CBC)", alg)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("the encrypted private key's IV is malformed")
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, fmt.Errorf("deriving the key: %w", err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	return cbcDecrypt(block, iv, info.Data)
}

// cbcDecrypt decrypts data and removes its PKCS#7 padding.
func cbcDecrypt(block cipher.Block, iv, data []byte) ([]byte, error) {
	bs := block.BlockSize()
	if len(iv) != bs || len(data) == 0 || len(data)%bs != 0 {
		return nil, errors.New("the encrypted private key is malformed")
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	// PKCS#7 padding; a wrong password almost always breaks it.
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, errors.New("cannot decrypt the private key: wrong ssl.key.password")
	}
	return out[:len(out)-pad], nil
}

type pkcs12PBEParams struct {
	Salt       []byte
	Iterations int
}

// decryptPKCS12PBE decrypts a key encrypted with pbeWithSHAAnd3-KeyTripleDES-CBC
// or pbeWithSHAAnd2-KeyTripleDES-CBC.
func decryptPKCS12PBE(info encryptedPrivateKeyInfo, password string) ([]byte, error) {
	var params pkcs12PBEParams
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("the encrypted private key's PBE parameters are malformed")
	}
	if params.Iterations < 1 || params.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("the private key's PBE iteration count %d is out of range", params.Iterations)
	}
	// The password as a NUL-terminated BMPString (UTF-16 big-endian).
	var pw []byte
	for _, r := range password {
		if r > 0xFFFF {
			return nil, errors.New("ssl.key.password has a character outside the BMP, which PKCS#12 cannot encode")
		}
		pw = append(pw, byte(r>>8), byte(r))
	}
	pw = append(pw, 0, 0)
	keyLen := 24
	if info.Algorithm.Algorithm.Equal(oidPBESHA12DES) {
		keyLen = 16
	}
	key := pkcs12KDF(pw, params.Salt, params.Iterations, 1, keyLen)
	if keyLen == 16 {
		key = append(key, key[:8]...) // two-key 3DES: K1 K2 K1
	}
	iv := pkcs12KDF(pw, params.Salt, params.Iterations, 2, 8)
	block, err := des.NewTripleDESCipher(key)
	if err != nil {
		return nil, err
	}
	return cbcDecrypt(block, iv, info.Data)
}

// pkcs12KDF derives size bytes for purpose id (1 key, 2 IV) with SHA-1, as
// RFC 7292 appendix B.2 says.
func pkcs12KDF(password, salt []byte, iterations int, id byte, size int) []byte {
	const v = 64 // SHA-1's block size
	fill := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		out := make([]byte, v*((len(b)+v-1)/v))
		for i := range out {
			out[i] = b[i%len(b)]
		}
		return out
	}
	D := bytes.Repeat([]byte{id}, v)
	I := append(fill(salt), fill(password)...)
	var out []byte
	for len(out) < size {
		h := sha1.New()
		h.Write(D)
		h.Write(I)
		A := h.Sum(nil)
		for j := 1; j < iterations; j++ {
			s := sha1.Sum(A)
			A = s[:]
		}
		out = append(out, A...)
		// I_j = (I_j + B + 1) mod 2^(8v), B being A repeated to v bytes.
		B := fill(A)
		for j := 0; j < len(I); j += v {
			carry := 1
			for k := v - 1; k >= 0; k-- {
				sum := int(I[j+k]) + int(B[k]) + carry
				I[j+k] = byte(sum)
				carry = sum >> 8
			}
		}
	}
	return out[:size]
}
