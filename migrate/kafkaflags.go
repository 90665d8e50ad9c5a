package migrate

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvSASLPassword is the environment variable that gives the SASL password
// when --sasl-password-file does not: a password is never a flag, where
// other users could read it in the process list.
const EnvSASLPassword = "KCCTL_KAFKA_SASL_PASSWORD"

// maxPasswordFile bounds a password file.
const maxPasswordFile = 64 << 10

// KafkaFlags are the flags with which a kcctl command reaches a Kafka
// cluster, as Kafka's own tools take them: --bootstrap-servers and
// --command-config (a Kafka client properties file), and overrides of the
// common security settings, which win over the file.
type KafkaFlags struct {
	BootstrapServers []string
	CommandConfig    string
	SecurityProtocol string
	SASLMechanism    string
	SASLUsername     string
	SASLPasswordFile string
	TLSCA            string
	TLSCert          string
	TLSKey           string
	TLSServerName    string
}

// AddKafkaFlags registers the Kafka connection flags on fs.
func AddKafkaFlags(fs *pflag.FlagSet) *KafkaFlags {
	f := &KafkaFlags{}
	fs.StringSliceVar(&f.BootstrapServers, "bootstrap-servers", nil, "Kafka brokers to connect to first, host:port, comma-separated (required)")
	fs.StringVar(&f.CommandConfig, "command-config", "", "Kafka client properties file (security.protocol, sasl.*, ssl.*), as Kafka's tools take it")
	fs.StringVar(&f.SecurityProtocol, "security-protocol", "", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (default: from --command-config, else implied by the SASL and TLS flags, else PLAINTEXT)")
	fs.StringVar(&f.SASLMechanism, "sasl-mechanism", "", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&f.SASLUsername, "sasl-username", "", "SASL user name")
	fs.StringVar(&f.SASLPasswordFile, "sasl-password-file", "", "file whose first line is the SASL password (else env "+EnvSASLPassword+")")
	fs.StringVar(&f.TLSCA, "tls-ca", "", "PEM file of the CA certificates that the brokers' certificates are checked against (default: the system's)")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "PEM file of the client certificate chain, for brokers that require one (with --tls-key)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "PEM file of the client certificate's private key (PKCS#8; encrypted: give ssl.key.password in --command-config)")
	fs.StringVar(&f.TLSServerName, "tls-server-name", "", "name the brokers' certificates must carry, instead of the host dialed")
	for _, name := range []string{"command-config", "sasl-password-file", "tls-ca", "tls-cert", "tls-key"} {
		_ = cobra.MarkFlagFilename(fs, name)
	}
	return f
}

// ClientConfig builds the client config: the --command-config file's
// properties, then the flags over them. When no security protocol is
// given anywhere, the flags imply one: SASL with --sasl-mechanism, TLS with
// a --tls-* flag.
func (f *KafkaFlags) ClientConfig() (ClientConfig, error) {
	props := map[string]string{}
	if f.CommandConfig != "" {
		p, err := LoadProperties(f.CommandConfig)
		if err != nil {
			return ClientConfig{}, fmt.Errorf("--command-config: %w", err)
		}
		maps.Copy(props, p)
	}
	var seeds []string
	for _, s := range f.BootstrapServers {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		// Kafka's tools take the flag only; a bootstrap.servers in the
		// file is used too.
		for _, s := range strings.Split(props["bootstrap.servers"], ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
	}
	if len(seeds) == 0 {
		return ClientConfig{}, errors.New("--bootstrap-servers is required")
	}

	if f.SASLMechanism != "" {
		props["sasl.mechanism"] = f.SASLMechanism
	}
	if f.SASLUsername != "" {
		props["sasl.username"] = f.SASLUsername
	}
	switch {
	case f.SASLPasswordFile != "":
		pass, err := readPasswordFile(f.SASLPasswordFile)
		if err != nil {
			return ClientConfig{}, fmt.Errorf("--sasl-password-file: %w", err)
		}
		props["sasl.password"] = pass
	case os.Getenv(EnvSASLPassword) != "":
		props["sasl.password"] = os.Getenv(EnvSASLPassword)
	}
	if f.TLSCA != "" {
		props["ssl.truststore.location"] = f.TLSCA
		props["ssl.truststore.type"] = "PEM"
		delete(props, "ssl.truststore.certificates")
		delete(props, "ssl.truststore.password")
	}
	if (f.TLSCert == "") != (f.TLSKey == "") {
		return ClientConfig{}, errors.New("--tls-cert and --tls-key go together")
	}
	if f.TLSCert != "" {
		chain, err := readStore("--tls-cert", f.TLSCert)
		if err != nil {
			return ClientConfig{}, err
		}
		key, err := readStore("--tls-key", f.TLSKey)
		if err != nil {
			return ClientConfig{}, err
		}
		props["ssl.keystore.type"] = "PEM"
		props["ssl.keystore.certificate.chain"] = string(chain)
		props["ssl.keystore.key"] = string(key)
		delete(props, "ssl.keystore.location")
		delete(props, "ssl.keystore.password")
	}

	tlsFlags := f.TLSCA != "" || f.TLSCert != "" || f.TLSServerName != ""
	switch {
	case f.SecurityProtocol != "":
		props["security.protocol"] = f.SecurityProtocol
	case props["security.protocol"] == "" && (f.SASLMechanism != "" || tlsFlags):
		proto := ProtocolSSL
		if f.SASLMechanism != "" {
			proto = ProtocolSASLPlaintext
			if tlsFlags {
				proto = ProtocolSASLSSL
			}
		}
		props["security.protocol"] = proto
	}
	return ClientConfig{BootstrapServers: seeds, Properties: props, TLSServerName: f.TLSServerName}, nil
}

// readPasswordFile returns the first line of a file, without its line end.
func readPasswordFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxPasswordFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxPasswordFile {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxPasswordFile)
	}
	s, _, _ := strings.Cut(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
	if s == "" {
		return "", fmt.Errorf("%s: the first line is empty", path)
	}
	return s, nil
}
