// Package replicas holds the scale-out test: two replicas of every
// service, each a real `seam <service> serve` process, on one shared
// PostgreSQL database. It has no code of its own; the test lives apart
// from package node because it builds the binary and runs eight
// processes, where node's tests run services in-process.
package replicas
