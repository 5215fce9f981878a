// Package stream is Seam's streaming connector: it reads a source topic or
// JetStream subject, sends its records through the gate with the broker
// position as each batch's identity, stages what the gate accepts per
// event-time partition, publishes a partition to an output topic or
// subject once its watermark has passed, and only then lets the source
// position move on. docs/streaming.md explains the design; the brokers
// themselves live in the jetstream and kafka packages.
//
// Everything the connector must remember lives in a journal on the
// broker (a JetStream stream or a Kafka topic partition it owns): the
// batch it is about to send (so a restart re-sends exactly the same
// batch under the same identity), the records each batch staged, how far
// the output got, and the events it has handled. A restart folds the
// journal back into memory; the output is exactly once by construction
// because every output message carries its sequence number, and a
// restart asks the output for the last sequence it holds before
// publishing again.
package stream
