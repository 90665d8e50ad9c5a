package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
)

// notFoundError marks an error about a named thing that does not exist
// (exit 3), found by kcctl itself rather than answered 404 by the server.
type notFoundError struct{ err error }

func (e *notFoundError) Error() string { return e.err.Error() }
func (e *notFoundError) Unwrap() error { return e.err }

// errInterrupted is a command stopped by the user (SIGINT, SIGTERM).
var errInterrupted = errors.New("interrupted")

// exitCode maps err to kcctl's exit code and the message(s) to print, each
// a line without "Error:". It is the one place that does so: every command,
// present or new, returns its error and lets this explain it.
func exitCode(ctx context.Context, err error, g *globals) (int, []string) {
	var (
		usage  *usageError
		nf     *notFoundError
		apiErr *client.APIError
		unr    *client.UnreachableError
	)
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		if errors.As(err, &unr) || err.Error() == context.Canceled.Error() {
			return exitInterrupted, []string{errInterrupted.Error()} // a request cut short
		}
		return exitInterrupted, []string{err.Error()} // says what goes on

	case errors.As(err, &usage) || isCobraUsage(err):
		return exitUsage, []string{humanUsage(err)}
	case errors.As(err, &nf):
		return exitNotFound, []string{err.Error()}
	case errors.As(err, &unr):
		return exitError, []string{unreachable(unr, g)}
	case errors.As(err, &apiErr):
		return apiExit(ctx, apiErr, g)
	}
	return exitError, []string{err.Error()}
}

func apiExit(ctx context.Context, e *client.APIError, g *globals) (int, []string) {
	switch e.Status {
	case http.StatusUnauthorized:
		return exitAuth, []string{e.Error(), fmt.Sprintf("The server did not accept kcctl's credentials: %s. Give --token, or --user with --password-file, the KCCTL_* variables or a context (kcctl --help).", g.conn.creds)}
	case http.StatusForbidden:
		return exitAuth, []string{e.Error(), fmt.Sprintf("The server knows kcctl's credentials (%s) but their role does not allow this.", g.conn.creds)}
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		if strings.HasPrefix(e.Path, "/kcd/") {
			if what := notKcd(ctx, g); what != "" {
				return exitError, []string{what}
			}
		}
		if e.Status == http.StatusNotFound {
			return exitNotFound, []string{e.Error()}
		}
	}
	return exitError, []string{e.Error()}
}

// notKcd tells, when the server does not serve kcd's own API, what it is;
// "" when it is kcd (or cannot be asked).
func notKcd(ctx context.Context, g *globals) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c := g.client()
	_, err := c.Version(ctx)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || (apiErr.Status != http.StatusNotFound && apiErr.Status != http.StatusMethodNotAllowed) {
		return ""
	}
	if info, err := c.ServerInfo(ctx); err == nil && info.Version != "" && info.KafkaClusterID != "" {
		return fmt.Sprintf("the server at %s is not kcd: it is Kafka Connect %s, which answers Kafka Connect's API only (kcctl's cluster, worker, assignments, rebalance and store commands need kcd)", c.BaseURL(), info.Version)
	}
	return fmt.Sprintf("the server at %s is not kcd: it has no kcd API (/kcd/v1/...). Check --server or the context's server", c.BaseURL())
}

// unreachable says why no answer came, without Go's internals.
func unreachable(e *client.UnreachableError, g *globals) string {
	var (
		dns     *net.DNSError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		recHdr  tls.RecordHeaderError
		ue      *url.Error
	)
	why := e.Err.Error()
	if errors.As(e.Err, &ue) {
		why = ue.Err.Error()
	}
	switch {
	case errors.Is(e.Err, context.DeadlineExceeded) || (ue != nil && ue.Timeout()):
		return fmt.Sprintf("the server at %s did not answer within %s (--request-timeout)", e.URL, g.requestTimeout)
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		why = "connection refused: is kcd running there?"
	case errors.As(e.Err, &dns):
		why = fmt.Sprintf("no such host %q", dns.Name)
	case errors.As(e.Err, &unknown):
		why = "its TLS certificate is not signed by a CA kcctl trusts: give --ca-file"
	case errors.As(e.Err, &host):
		why = "its TLS certificate is not for this host name: " + host.Error()
	case errors.As(e.Err, &recHdr):
		why = "it does not speak TLS: use an http:// server URL"
	case strings.Contains(why, "server gave HTTP response to HTTPS client"):
		why = "it does not speak TLS: use an http:// server URL"
	}
	return fmt.Sprintf("cannot reach the server at %s: %s (check --server, KCCTL_SERVER or the context's server)", e.URL, why)
}

// isCobraUsage tells cobra's own usage errors, which it returns as plain
// errors: an unknown command, a required flag not given.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command ") || strings.HasPrefix(s, "required flag(s) ") ||
		strings.HasPrefix(s, "unknown flag: ") || strings.HasPrefix(s, "unknown shorthand flag: ")
}

var invalidFlag = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: (.*)$`)

// humanUsage rewrites pflag's messages about flag values, which quote Go's
// parsers, into what the user typed and what the flag takes.
func humanUsage(err error) string {
	m := invalidFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	val, flag, why := m[1], m[2], m[3]
	if i := strings.LastIndex(flag, ", "); i >= 0 {
		flag = flag[i+2:] // "-o, --output": the long name
	}
	switch {
	case strings.Contains(why, "strconv.ParseBool"):
		return fmt.Sprintf("%s must be true or false, got %q", flag, val)
	case strings.Contains(why, "value out of range"):
		return fmt.Sprintf("%s is out of range, got %q", flag, val)
	case strings.Contains(why, "strconv.ParseUint"):
		return fmt.Sprintf("%s must be a whole number from 0 up, got %q", flag, val)
	case strings.Contains(why, "strconv.Parse"):
		return fmt.Sprintf("%s must be a number, got %q", flag, val)
	case strings.Contains(why, "time: "):
		return fmt.Sprintf("%s must be a duration such as 30s, 2m or 1h, got %q", flag, val)
	}
	return fmt.Sprintf("%s: %q: %s", flag, val, why)
}

// normalizeServers normalizes a comma-separated list of servers: several
// REST URLs of one cluster, tried in turn.
func normalizeServers(list string, tlsGiven bool) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		n, err := normalizeServer(s, tlsGiven)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, &usageError{fmt.Errorf("no server given (--server, KCCTL_SERVER or the context's server)")}
	}
	return out, nil
}

// normalizeServer turns a server given as host:port into a URL: https://
// when TLS settings are given, else http://. It refuses what is no URL.
func normalizeServer(s string, tlsGiven bool) (string, error) {
	in := s
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		scheme := "http://"
		if tlsGiven {
			scheme = "https://"
		}
		s = scheme + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", &usageError{fmt.Errorf("server %q is not host:port or an http:// or https:// URL", in)}
	}
	return strings.TrimRight(s, "/"), nil
}
