//go:build !linux

package fsm

// currentBootID is empty where the boot cannot be identified: NoSync is then
// ignored and every commit is synced.
func currentBootID() string { return "" }
