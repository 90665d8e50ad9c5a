package migrate

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/kcd-project/kcd/internal/testenv"
)

// connectBound is how long a connection attempt may take, failed or not:
// a wrong password or certificate must fail fast, not hang.
const connectBound = 20 * time.Second

// listTopics connects with cfg and lists the cluster's topics (the first
// thing kcctl migrate does), within connectBound.
func listTopics(t *testing.T, cfg ClientConfig) (kadm.TopicDetails, time.Duration, error) {
	t.Helper()
	cl, err := cfg.NewClient()
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), connectBound)
	defer cancel()
	start := time.Now()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err == nil {
		err = topics.Error()
	}
	return topics, time.Since(start), ExplainError(err)
}

// mustList checks that cfg reaches the broker and lists the topic that the
// test made through the plaintext listener.
func mustList(t *testing.T, cfg ClientConfig, topic string) {
	t.Helper()
	topics, took, err := listTopics(t, cfg)
	if err != nil {
		t.Fatalf("list topics after %v: %v", took, err)
	}
	if !topics.Has(topic) {
		t.Fatalf("topic %s not listed (%d topics)", topic, len(topics))
	}
}

// plainTopic makes a topic through the plaintext listener, so that a listing
// through another listener has something known to find.
func plainTopic(t *testing.T) string {
	t.Helper()
	brokers := testenv.Require(t, testenv.Kafka)
	cl, err := ClientConfig{BootstrapServers: []string{brokers}}.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("kcd-kafkasec-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, topic)
	})
	return topic
}

func jaas(module, user, pass string) string {
	q := func(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }
	return "org.apache.kafka.common.security." + module + " required username=" + q(user) + " password=" + q(pass) + ";"
}

func TestIntegrationKafkaSASL(t *testing.T) {
	addr := testenv.Require(t, testenv.KafkaSASL)
	user := testenv.Require(t, testenv.KafkaSASLUser)
	pass := testenv.Require(t, testenv.KafkaSASLPassword)
	topic := plainTopic(t)

	for _, tc := range []struct{ mech, module string }{
		{MechanismPlain, "plain.PlainLoginModule"},
		{MechanismScramSHA512, "scram.ScramLoginModule"},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			// As a Kafka user writes it: a client.properties file.
			dir := t.TempDir()
			file := filepath.Join(dir, "client.properties")
			text := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=" + tc.mech + "\n" +
				"sasl.jaas.config=" + jaas(tc.module, user, pass) + "\n"
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			props, err := LoadProperties(file)
			if err != nil {
				t.Fatal(err)
			}
			mustList(t, ClientConfig{BootstrapServers: []string{addr}, Properties: props}, topic)

			// As kcctl's flags give it: user name, password in a file.
			pwFile := filepath.Join(dir, "password")
			if err := os.WriteFile(pwFile, []byte(pass+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := flagConfig(t, "--bootstrap-servers", addr, "--sasl-mechanism", tc.mech,
				"--sasl-username", user, "--sasl-password-file", pwFile)
			mustList(t, cfg, topic)

			// A wrong password fails, fast, saying so, and without the password.
			wrong := "not-" + pass + "-wrong"
			props["sasl.jaas.config"] = jaas(tc.module, user, wrong)
			_, took, err := listTopics(t, ClientConfig{BootstrapServers: []string{addr}, Properties: props})
			if err == nil {
				t.Fatal("listed topics with a wrong password")
			}
			if !strings.Contains(err.Error(), "authentication failed") {
				t.Errorf("error does not say authentication failed: %v", err)
			}
			if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), pass) {
				t.Errorf("error shows the password: %v", err)
			}
			if took >= connectBound {
				t.Errorf("a wrong password took %v to fail", took)
			}
			t.Logf("wrong password: failed in %v: %v", took, err)
		})
	}
	t.Run("NoSASL", func(t *testing.T) {
		_, took, err := listTopics(t, ClientConfig{BootstrapServers: []string{addr}})
		if err == nil {
			t.Fatal("listed topics on the SASL listener without SASL")
		}
		if took >= connectBound {
			t.Errorf("no SASL on a SASL listener took %v to fail", took)
		}
		if !strings.Contains(err.Error(), "SASL") {
			t.Errorf("no SASL on the SASL listener: %v, want an error that names SASL", err)
		}
	})
}

func TestIntegrationKafkaTLS(t *testing.T) {
	addr := testenv.Require(t, testenv.KafkaTLS)
	caFile := testenv.Require(t, testenv.KafkaTLSCA)
	topic := plainTopic(t)

	t.Run("PEMTruststore", func(t *testing.T) {
		mustList(t, ClientConfig{BootstrapServers: []string{addr}, Properties: map[string]string{
			"security.protocol":       "SSL",
			"ssl.truststore.type":     "PEM",
			"ssl.truststore.location": caFile,
		}}, topic)
	})
	t.Run("PKCS12Truststore", func(t *testing.T) {
		ca := readCerts(t, caFile)
		p12, err := pkcs12.Modern.EncodeTrustStore(ca, "changeit")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "truststore.p12")
		if err := os.WriteFile(file, p12, 0o600); err != nil {
			t.Fatal(err)
		}
		mustList(t, ClientConfig{BootstrapServers: []string{addr}, Properties: map[string]string{
			"security.protocol":       "SSL",
			"ssl.truststore.type":     "PKCS12",
			"ssl.truststore.location": file,
			"ssl.truststore.password": "changeit",
		}}, topic)
	})
	t.Run("Flags", func(t *testing.T) {
		mustList(t, flagConfig(t, "--bootstrap-servers", addr, "--tls-ca", caFile), topic)
		// The certificate names 127.0.0.1 and localhost, not other.example.
		_, _, err := listTopics(t, flagConfig(t, "--bootstrap-servers", addr, "--tls-ca", caFile, "--tls-server-name", "other.example"))
		if err == nil || !strings.Contains(err.Error(), "not valid for the host") {
			t.Fatalf("a wrong --tls-server-name: err = %v, want the certificate not valid for the host", err)
		}
		mustList(t, flagConfig(t, "--bootstrap-servers", addr, "--tls-ca", caFile, "--tls-server-name", "localhost"), topic)
	})
	t.Run("WrongCA", func(t *testing.T) {
		other, _ := newCA(t, "not the testenv CA")
		file := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, hostCheck := range []bool{true, false} {
			props := map[string]string{"security.protocol": "SSL", "ssl.truststore.location": file}
			if !hostCheck {
				props["ssl.endpoint.identification.algorithm"] = ""
			}
			_, took, err := listTopics(t, ClientConfig{BootstrapServers: []string{addr}, Properties: props})
			if err == nil {
				t.Fatalf("host check %v: connected although no trusted CA signed the broker's certificate", hostCheck)
			}
			if !strings.Contains(err.Error(), "certificate is not trusted") {
				t.Errorf("host check %v: error does not say the certificate is not trusted: %v", hostCheck, err)
			}
			if took >= connectBound {
				t.Errorf("an untrusted certificate took %v to fail", took)
			}
		}
	})
	t.Run("TLSToPlaintextListener", func(t *testing.T) {
		plain := testenv.Require(t, testenv.Kafka)
		_, took, err := listTopics(t, ClientConfig{BootstrapServers: []string{plain}, Properties: map[string]string{
			"security.protocol": "SSL", "ssl.truststore.location": caFile,
		}})
		if err == nil || !strings.Contains(err.Error(), "TLS") {
			t.Fatalf("TLS to the plaintext listener: %v, want an error that names TLS", err)
		}
		if took >= connectBound {
			t.Errorf("TLS to a plaintext listener took %v to fail", took)
		}
	})
	t.Run("PlaintextToTLSListener", func(t *testing.T) {
		_, took, err := listTopics(t, ClientConfig{BootstrapServers: []string{addr}})
		if err == nil {
			t.Fatal("listed topics in plaintext on the TLS listener")
		}
		if took >= connectBound {
			t.Errorf("plaintext on a TLS listener took %v to fail", took)
		}
		t.Logf("plaintext on the TLS listener: %v", err)
	})
}

func readCerts(t *testing.T, file string) []*x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pemCertificates(file, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return certs
}
