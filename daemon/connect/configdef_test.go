package connect

import (
	"errors"
	"strings"
	"testing"
)

// A PASSWORD value never shows in a validation error, as Kafka Connect
// prints a Password as [hidden].
func TestValidateValueHidesPasswords(t *testing.T) {
	v := "kcd-canary-secret-configdef"
	for _, k := range []ConfigKey{
		{Name: "db.password", Type: TypePassword, Validator: func(string) error { return errors.New("too short") }},
		{Name: "plain", Type: TypeString, Validator: func(string) error { return errors.New("too short") }},
	} {
		err := k.ValidateValue(&v)
		if err == nil {
			t.Fatalf("%s: no error", k.Name)
		}
		hidden := !strings.Contains(err.Error(), v) && strings.Contains(err.Error(), "[hidden]")
		if hidden != (k.Type == TypePassword) {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
}
