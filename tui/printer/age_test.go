package printer

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	cases := map[time.Duration]string{
		-time.Second:                   "0s",
		0:                              "0s",
		1500 * time.Millisecond:        "1s",
		119 * time.Second:              "119s",
		5*time.Minute + 30*time.Second: "5m30s",
		6 * time.Minute:                "6m",
		95 * time.Minute:               "95m",
		5*time.Hour + 30*time.Minute:   "5h30m",
		4 * time.Hour:                  "4h",
		30 * time.Hour:                 "30h",
		3*24*time.Hour + 5*time.Hour:   "3d5h",
		2 * 24 * time.Hour:             "2d",
		12*24*time.Hour + 7*time.Hour:  "12d",
		400*24*time.Hour + time.Minute: "400d",
	}
	for d, want := range cases {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
