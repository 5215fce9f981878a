// Command chaos is Seam's reliability suite, run by `make chaos`: it builds
// the seam binary, runs the four services as processes of their own on a
// payments source, and
//
//   - kills them with SIGKILL in turn under a load that retries, then
//     counts every record the gate's monitors and quarantine hold against
//     every record it acknowledged: none lost, none twice;
//   - keeps a peer down for a long outage and measures how soon ingest
//     works again once it is back;
//   - hangs each peer of the gate with SIGSTOP and checks that ingest is
//     answered (Unavailable, naming the right peer) within the peer
//     deadline, and recovers after SIGCONT;
//   - sends a corpus of bad inputs over gRPC, REST and the CLI, each with
//     the answer it must get, while the server's memory is sampled.
//
// `-short` is the form CI runs (a minute or two); without it the long form
// writes the figures docs/reliability.md quotes.
package main
