package restauth

import (
	"net/http/httptest"
	"testing"
)

func BenchmarkAuthenticateToken(b *testing.B) {
	a := newAuth(b, Config{})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+opToken)
	for b.Loop() {
		if _, err := a.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}

// A password sent with every request costs one hash check per CacheTTL.
func BenchmarkAuthenticateCachedPassword(b *testing.B) {
	a := newAuth(b, Config{})
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", adminPW)
	for b.Loop() {
		if _, err := a.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}
