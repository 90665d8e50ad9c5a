package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/daemon/client"
)

// kcctlConfig is kcctl's config file ($KCCTL_CONFIG, else
// ~/.config/kcctl/config.yaml): named contexts, one of them current.
type kcctlConfig struct {
	CurrentContext string          `yaml:"current-context,omitempty"`
	Contexts       []contextConfig `yaml:"contexts"`
}

// contextConfig is one cluster and how to reach it. Paths are relative to
// the config file's folder; ~/ is the home folder.
type contextConfig struct {
	Name   string `yaml:"name"`
	Server string `yaml:"server,omitempty"` // one URL, or several comma-separated

	Token        string `yaml:"token,omitempty"`
	User         string `yaml:"user,omitempty"`
	PasswordFile string `yaml:"password-file,omitempty"`
	CAFile       string `yaml:"ca-file,omitempty"`
	ClientCert   string `yaml:"client-cert,omitempty"`
	ClientKey    string `yaml:"client-key,omitempty"`
}

// configPath is where kcctl's config file is, and whether it was named
// explicitly (then it must exist).
func configPath() (string, bool) {
	if p := os.Getenv("KCCTL_CONFIG"); p != "" {
		return p, true
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", false
	}
	return filepath.Join(home, ".config", "kcctl", "config.yaml"), false
}

// loadContext returns the context named name ("" the current one, if any)
// from the config file; nil when there is none to use.
func loadContext(name string) (*contextConfig, error) {
	path, explicit := configPath()
	if path == "" {
		if name != "" {
			return nil, errors.New("no home folder to find the config file in: set KCCTL_CONFIG")
		}
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit && name == "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kcctl config: %w", err)
	}
	var cfg kcctlConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("kcctl config %s: %w", path, err)
	}
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return nil, nil
	}
	for i := range cfg.Contexts {
		if c := &cfg.Contexts[i]; c.Name == name {
			dir := filepath.Dir(path)
			for _, p := range []*string{&c.PasswordFile, &c.CAFile, &c.ClientCert, &c.ClientKey} {
				*p = resolvePath(dir, *p)
			}
			return c, nil
		}
	}
	return nil, fmt.Errorf("kcctl config %s has no context %q", path, name)
}

func resolvePath(dir, p string) string {
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "~/"):
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	case !filepath.IsAbs(p):
		return filepath.Join(dir, p)
	}
	return p
}

// connection is what kcctl talks to and how it authenticates.
type connection struct {
	server string
	opts   client.Options
	// creds says which credentials kcctl sends and where they come from,
	// by name only (never a secret), for messages.
	creds string
}

// resolveConnection picks the server, credentials and TLS settings from
// the flags, then the environment, then the context.
func resolveConnection(flags *pflag.FlagSet, g *globals) (connection, error) {
	ctx, err := loadContext(g.context)
	if err != nil {
		return connection{}, err
	}
	if ctx == nil {
		ctx = &contextConfig{}
	}
	conn := connection{server: g.server}
	if !flags.Changed("server") {
		if env := os.Getenv("KCCTL_SERVER"); env != "" {
			conn.server = env
		} else if ctx.Server != "" {
			conn.server = ctx.Server
		}
	}
	ctxName := "context " + ctx.Name
	type level struct {
		from          string
		token, user   string
		password      func() (string, error)
		passwordWhere string
	}
	fromFile := func(path string) func() (string, error) {
		if path == "" {
			return nil
		}
		return func() (string, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("password file: %w", err)
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}
	}
	levels := []level{
		{from: "flags", token: g.token, user: g.user, password: fromFile(g.passwordFile), passwordWhere: "--password-file"},
		{from: "environment", token: os.Getenv("KCCTL_TOKEN"), user: os.Getenv("KCCTL_USER"), passwordWhere: "KCCTL_PASSWORD"},
		{from: ctxName, token: ctx.Token, user: ctx.User, password: fromFile(ctx.PasswordFile), passwordWhere: ctxName + " password-file"},
	}
	if pw, ok := os.LookupEnv("KCCTL_PASSWORD"); ok {
		levels[1].password = func() (string, error) { return pw, nil }
	}
	conn.creds = "none"
	for i, l := range levels {
		if l.token == "" && l.user == "" {
			continue
		}
		if l.token != "" && l.user != "" {
			return connection{}, &usageError{fmt.Errorf("%s give both a token and a user: give one", l.from)}
		}
		if l.token != "" {
			conn.opts.Credentials.Token = l.token
			conn.creds = "a bearer token from " + l.from
			break
		}
		// A user's password comes from its own level or a lower one.
		for _, pl := range levels[i:] {
			if pl.password == nil {
				continue
			}
			pw, err := pl.password()
			if err != nil {
				return connection{}, err
			}
			conn.opts.Credentials.User, conn.opts.Credentials.Password = l.user, pw
			conn.creds = fmt.Sprintf("user %q (from %s) with the password from %s", l.user, l.from, pl.passwordWhere)
			break
		}
		if conn.opts.Credentials.User == "" {
			return connection{}, &usageError{fmt.Errorf("user %q needs a password: --password-file, KCCTL_PASSWORD or password-file in the context", l.user)}
		}
		break
	}
	pick := func(flag, fromCtx string) string {
		if flag != "" {
			return flag
		}
		return fromCtx
	}
	caFile, cert, key := pick(g.caFile, ctx.CAFile), pick(g.clientCert, ctx.ClientCert), pick(g.clientKey, ctx.ClientKey)
	if caFile != "" || cert != "" || key != "" {
		tc, err := tlsConfig(caFile, cert, key)
		if err != nil {
			return connection{}, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		conn.opts.Transport = tr
		if cert != "" && conn.creds == "none" {
			conn.creds = "the client certificate " + cert
		}
	}
	if g.requestTimeout < 0 || (g.requestTimeout == 0 && flags.Changed("request-timeout")) {
		return connection{}, &usageError{fmt.Errorf("--request-timeout must be above 0, got %s", g.requestTimeout)}
	}
	conn.opts.Timeout = g.requestTimeout
	servers, err := normalizeServers(conn.server, conn.opts.Transport != nil)
	if err != nil {
		return connection{}, err
	}
	conn.server, conn.opts.Fallbacks = servers[0], servers[1:]
	return conn, nil
}

func tlsConfig(caFile, cert, key string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca file %s holds no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, &usageError{errors.New("a client certificate needs both --client-cert and --client-key")}
	}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return tc, nil
}
