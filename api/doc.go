// Package api holds the wire types of kcd's REST APIs, Kafka Connect's and
// /kcd/v1: the server writes them and its clients (kcctl, daemon/client,
// third-party tools) read them, so that no client links server code. It is
// a leaf: it imports nothing of kcd but, where needed, store/.
package api
