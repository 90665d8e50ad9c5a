package daemon

import (
	"log/slog"
	"net/http"
	"testing"
)

// A node on loopback answers only requests addressed to a loopback name:
// a page whose name an attacker points at 127.0.0.1 sends its own.
func TestLoopbackNodeRefusesForeignHost(t *testing.T) {
	n := New(devConfig(t, t.TempDir()), slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for host, want := range map[string]int{"rebound.example": http.StatusForbidden, "localhost": http.StatusOK, "": http.StatusOK} {
		req, err := http.NewRequest(http.MethodGet, n.RESTURL()+"/kcd/v1/version", nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, res.StatusCode, want)
		}
	}
}
