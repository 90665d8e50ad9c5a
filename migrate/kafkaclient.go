package migrate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientConfig is how to reach a Kafka cluster, as a Kafka user gives it:
// bootstrap servers and Kafka client properties (the --command-config file
// of Kafka's tools).
//
// Supported: security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL;
// sasl.mechanism PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 with the credentials
// of sasl.jaas.config (PlainLoginModule, ScramLoginModule), or of
// sasl.username and sasl.password (librdkafka's names; they win over
// sasl.jaas.config); ssl.truststore.* and ssl.keystore.* in PEM or PKCS12
// (files or, for PEM, the text properties ssl.truststore.certificates,
// ssl.keystore.certificate.chain and ssl.keystore.key), ssl.key.password,
// ssl.endpoint.identification.algorithm, ssl.enabled.protocols,
// ssl.cipher.suites; client.id, request.timeout.ms (franz-go's request
// timeout overhead), socket.connection.setup.timeout.ms (its dial timeout). Other Kafka client properties do not
// matter here and are ignored, except those that change security in a way
// kcctl cannot follow (a Java class, another SASL mechanism): those are
// errors.
type ClientConfig struct {
	BootstrapServers []string
	Properties       map[string]string
	// TLSServerName, when set, is the name every broker's certificate is
	// checked against instead of the host dialed. Kafka has no property
	// for it; kcctl's --tls-server-name sets it.
	TLSServerName string
}

// The security protocols and SASL mechanisms, as Kafka names them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"

	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// javaClassProps name Java classes that change how a Kafka client
// authenticates: kcctl cannot run them, so they are errors when SASL is on.
var javaClassProps = []string{
	"sasl.client.callback.handler.class",
	"sasl.login.callback.handler.class",
	"sasl.login.class",
}

// Options returns the franz-go options that connect to the cluster as c
// says. Unsupported or malformed settings are errors naming the property;
// no error quotes a password or a key.
func (c ClientConfig) Options() ([]kgo.Opt, error) {
	var seeds []string
	for _, s := range c.BootstrapServers {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("no bootstrap servers")
	}
	p := c.Properties
	if p == nil {
		p = map[string]string{}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if id := p["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	if d, ok, err := millisProp(p, "request.timeout.ms"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, kgo.RequestTimeoutOverhead(d))
	}
	if d, ok, err := millisProp(p, "socket.connection.setup.timeout.ms"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, kgo.DialTimeout(d))
	}

	protocol, err := securityProtocol(p)
	if err != nil {
		return nil, err
	}
	if protocol == ProtocolSSL || protocol == ProtocolSASLSSL {
		cfg, err := tlsConfig(p, c.TLSServerName)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if protocol == ProtocolSASLPlaintext || protocol == ProtocolSASLSSL {
		m, err := saslMechanism(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// Protocol is the security protocol c uses (PLAINTEXT when not set).
func (c ClientConfig) Protocol() (string, error) { return securityProtocol(c.Properties) }

func securityProtocol(p map[string]string) (string, error) {
	v := strings.ToUpper(strings.TrimSpace(p["security.protocol"]))
	switch v {
	case "":
		return ProtocolPlaintext, nil
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		return v, nil
	}
	return "", fmt.Errorf("security.protocol: %q is not supported (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", p["security.protocol"])
}

func millisProp(p map[string]string, k string) (time.Duration, bool, error) {
	v := strings.TrimSpace(p[k])
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/time.Millisecond) {
		return 0, false, fmt.Errorf("%s: %q is not a positive number of milliseconds", k, v)
	}
	return time.Duration(n) * time.Millisecond, true, nil
}

// saslMechanism returns the SASL mechanism and its credentials.
func saslMechanism(p map[string]string) (sasl.Mechanism, error) {
	for _, k := range javaClassProps {
		if p[k] != "" {
			return nil, fmt.Errorf("%s: names a Java class, which kcctl cannot run; remove it (kcctl supports PLAIN and SCRAM credentials in sasl.jaas.config)", k)
		}
	}
	mech := strings.ToUpper(strings.TrimSpace(p["sasl.mechanism"]))
	switch mech {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
	case "":
		return nil, errors.New("sasl.mechanism: not set, and Kafka's default GSSAPI (Kerberos) is not supported; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	default:
		return nil, fmt.Errorf("sasl.mechanism: %q is not supported (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", p["sasl.mechanism"])
	}
	user, userSet := p["sasl.username"]
	pass, passSet := p["sasl.password"]
	token := false
	if jc := strings.TrimSpace(p["sasl.jaas.config"]); jc != "" && !(userSet && passSet) {
		e, err := parseJAAS(jc)
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		want := "PlainLoginModule"
		if mech != MechanismPlain {
			want = "ScramLoginModule"
		}
		if cls := e.Module[strings.LastIndexByte(e.Module, '.')+1:]; cls != want {
			return nil, fmt.Errorf("sasl.jaas.config: login module %s does not go with sasl.mechanism %s (want org.apache.kafka.common.security.%s.%s)",
				e.Module, mech, strings.ToLower(strings.TrimSuffix(want, "LoginModule")), want)
		}
		if !userSet {
			user, userSet = e.Options["username"]
		}
		if !passSet {
			pass, passSet = e.Options["password"]
		}
		if mech != MechanismPlain {
			token = strings.EqualFold(e.Options["tokenauth"], "true")
		}
	}
	if !userSet || user == "" {
		return nil, fmt.Errorf("sasl.mechanism %s needs a user name: set username in sasl.jaas.config (or --sasl-username)", mech)
	}
	if !passSet {
		return nil, fmt.Errorf("sasl.mechanism %s needs a password: set password in sasl.jaas.config (or --sasl-password-file, KCCTL_KAFKA_SASL_PASSWORD)", mech)
	}
	switch mech {
	case MechanismPlain:
		a := plain.Auth{User: user, Pass: pass}
		return a.AsMechanism(), nil
	case MechanismScramSHA256:
		a := scram.Auth{User: user, Pass: pass, IsToken: token}
		return a.AsSha256Mechanism(), nil
	default:
		a := scram.Auth{User: user, Pass: pass, IsToken: token}
		return a.AsSha512Mechanism(), nil
	}
}

// NewClient returns a franz-go client for c with extra options after c's.
func (c ClientConfig) NewClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.Options()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(slices.Concat(opts, extra)...)
}

// Ping checks that the cluster answers and accepts c's credentials: one
// metadata request, within ctx.
func (c ClientConfig) Ping(ctx context.Context) error {
	cl, err := c.NewClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	return ExplainError(cl.Ping(ctx))
}

// ExplainError says what a Kafka client's connection error means for the
// user's settings (authentication failed, the broker's certificate is not
// trusted, not TLS where TLS was expected), wrapping err; other errors are
// returned as they are (franz-go's own say when a connection closed at once
// looks like TLS or SASL missing on one side).
func ExplainError(err error) error {
	if err == nil {
		return nil
	}
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
		opErr     *net.OpError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("authentication failed: the broker refused the SASL user name or password: %w", err)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Errorf("authentication failed: the broker's listener does not enable this sasl.mechanism: %w", err)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("the broker's TLS certificate is not trusted: no CA in the truststore (--tls-ca, ssl.truststore.*; default: the system's) signed it: %w", err)
	case errors.As(err, &hostErr):
		return fmt.Errorf("the broker's TLS certificate is not valid for the host dialed (see --tls-server-name, or ssl.endpoint.identification.algorithm= to skip the host name check): %w", err)
	case errors.As(err, &invalid):
		return fmt.Errorf("the broker's TLS certificate is not valid: %w", err)
	case errors.As(err, &recordErr):
		return fmt.Errorf("the broker did not answer in TLS: is the listener PLAINTEXT or SASL_PLAINTEXT (security.protocol)? %w", err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Errorf("cannot reach the broker (are --bootstrap-servers, and the addresses the brokers advertise, right and reachable?): %w", err)
	}
	return err
}
