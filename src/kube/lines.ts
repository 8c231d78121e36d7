/**
 * Splits a watch stream into lines. Watch events are newline-delimited JSON, and a chunk boundary
 * may fall anywhere, including inside a multi-byte UTF-8 character.
 */
export class LineDecoder {
  private readonly decoder = new TextDecoder();
  private buffered = '';

  /** Feeds a chunk and returns every complete, non-blank line it finished. */
  push(chunk: Uint8Array): string[] {
    this.buffered += this.decoder.decode(chunk, { stream: true });
    return this.drain();
  }

  /** Flushes what is left at end of stream (a final line without newline). */
  end(): string[] {
    this.buffered += this.decoder.decode();
    const lines = this.drain();
    const rest = this.buffered.trim();
    this.buffered = '';
    if (rest) lines.push(rest);
    return lines;
  }

  private drain(): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = this.buffered.indexOf('\n'); nl >= 0; nl = this.buffered.indexOf('\n', start)) {
      const line = this.buffered.slice(start, nl).trim();
      if (line) lines.push(line);
      start = nl + 1;
    }
    if (start > 0) this.buffered = this.buffered.slice(start);
    return lines;
  }
}
