import { spawn } from 'node:child_process';

/**
 * Runs a child script that prints `ack <fields…>` lines, kills it with SIGKILL once it has acknowledged
 * `acks` times, and resolves with the fields of every acknowledgement it printed. Rejects if the child
 * exits by itself (its stderr in the message).
 */
export function killAfterAcks(script: string, args: readonly string[], acks: number): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const acked: string[][] = [];
    let buffer = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        const [word, ...fields] = line.split(' ');
        if (word === 'ack') acked.push(fields);
        if (acked.length >= acks && !child.killed) child.kill('SIGKILL');
      }
    });
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve(acked) : reject(new Error(`child exited by itself: ${stderr}`)),
    );
  });
}
