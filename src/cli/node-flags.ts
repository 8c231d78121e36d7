/**
 * V8 flags the operator process runs with. Node 24 lets the young generation grow to 32 MiB per
 * semi-space on a machine with plenty of memory; the operator's garbage is short-lived (helm output,
 * watch events), so most of that was empty heap held as RSS: with 200 CRs the heap reached 185 MiB
 * for 26 MiB of live objects. A 4 MiB semi-space measured 142 MiB peak RSS instead of 241 MiB for the
 * same upgrade wave, at the same operator CPU. V8 reads these only at start-up, so they go on the
 * command line: the Dockerfile ENTRYPOINT and the bin shebang spell them out (a unit test keeps them in
 * step), and the demo, the bench and the test harness pass this list.
 */
export const OPERATOR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
