// Package golden holds what kcd is compared against: behaviour of a real
// Apache Kafka Connect worker, checked live against the test environment's
// worker, and fixtures captured from it.
package golden
