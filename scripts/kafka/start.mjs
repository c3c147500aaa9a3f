#!/usr/bin/env node
// Start a single-node Kafka broker (KRaft, broker+controller) on 127.0.0.1 for tests.
// Idempotent: if a broker already answers on KAFKA_PORT (default 9092) it just prints the address.
// Jars come from Maven Central (pom.xml beside this file) into
// ${SLUICE_CACHE:-~/.cache/sluice}/kafka-<version>/lib; data, log and pid file live next to them.
// On success prints `KAFKA_BROKERS=127.0.0.1:<port>` on stdout once the broker, its group and transaction
// coordinators and its producer-id manager answer (everything else goes to stderr).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const POM = path.join(HERE, 'pom.xml');
const VERSION = fs.readFileSync(POM, 'utf8').match(/<kafka\.version>([^<]+)</)[1];
const HOST = '127.0.0.1';
const PORT = Number(process.env.KAFKA_PORT || 9092);
const CONTROLLER_PORT = Number(process.env.KAFKA_CONTROLLER_PORT || PORT + 1);
const CACHE = path.join(process.env.SLUICE_CACHE || path.join(os.homedir(), '.cache', 'sluice'), `kafka-${VERSION}`);
const LIB = path.join(CACHE, 'lib');
const RUN = path.join(CACHE, `broker-${PORT}`); // per-port: data dir, config, log, pid
const DATA = path.join(RUN, 'data');
const PROPS = path.join(RUN, 'server.properties');
const LOG4J = path.join(RUN, 'log4j2.properties');
const LOG = path.join(RUN, 'kafka.log');
const PIDFILE = path.join(RUN, 'kafka.pid');
const CLUSTER_ID = 'c2x1aWNlLWthZmthLWRldg'; // fixed: base64url("sluice-kafka-dev"), 16 bytes
const TIMEOUT_MS = Number(process.env.KAFKA_START_TIMEOUT_MS || 120_000);
const BOOTSTRAP = `${HOST}:${PORT}`;
// --fresh: when this run starts the broker, it starts on an empty data directory (a running broker is
// reused as it is). The test setup asks for it so old topics and groups do not pile up across runs.
const FRESH = process.argv.includes('--fresh');

const say = (msg) => process.stderr.write(`[kafka] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function die(msg) {
  say(`ERROR: ${msg}`);
  process.exit(1);
}
function alive(pid) {
  // a zombie (exited, not yet reaped) counts as dead
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code !== 'EPERM') return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
// The pid file's process is ours only if it still runs kafka.Kafka (guards against pid reuse).
const isBroker = (pid) => {
  try {
    return alive(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka');
  } catch {
    return alive(pid);
  }
};
const STARTED = /Kafka Server started|started \(kafka\.server\.KafkaRaftServer\)/;
function readLog() {
  try {
    return fs.readFileSync(LOG, 'utf8');
  } catch {
    return '';
  }
}
const logTail = (lines = 60) => readLog().split('\n').slice(-lines).join('\n') || '(no log)';

// One Kafka request (header v1) over a raw socket. Resolves the response body after the correlation
// id (a Buffer), 'down' if nothing listens on the port, or 'other' if something not Kafka answered.
function kafkaRequest(apiKey, version, body = Buffer.alloc(0), timeoutMs = 2000) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: HOST, port: PORT });
    let buf = Buffer.alloc(0);
    const done = (r) => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done('other'));
    sock.on('error', (e) => done(e.code === 'ECONNREFUSED' ? 'down' : 'other'));
    sock.on('close', () => done(buf.length ? 'other' : 'down'));
    sock.on('connect', () => {
      const head = Buffer.alloc(14);
      head.writeInt32BE(10 + body.length, 0); // size
      head.writeInt16BE(apiKey, 4);
      head.writeInt16BE(version, 6);
      head.writeInt32BE(0x5eed, 8); // correlation_id
      head.writeInt16BE(-1, 12); // client_id: null
      sock.write(Buffer.concat([head, body]));
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 8 && buf.readInt32BE(4) !== 0x5eed) done('other');
      else if (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) done(buf.subarray(8));
    });
  });
}
// ApiVersions v0: error_code first. Returns 'kafka', 'down' or 'other'.
const apiVersions = async () => {
  const r = await kafkaRequest(18, 0);
  return Buffer.isBuffer(r) ? (r.length >= 2 && r.readInt16BE(0) === 0 ? 'kafka' : 'other') : r;
};
// Requests whose first use on a fresh broker returns a retriable error while the broker sets things
// up (creating __consumer_offsets / __transaction_state, fetching a producer-id block from the
// controller). kafkajs retries those but logs them as errors, so start.mjs waits until all succeed.
// Each response starts with throttle_time_ms (int32), then error_code (int16).
const str = (s) => Buffer.concat([Buffer.from([0, s.length]), Buffer.from(s)]);
const WARMUP = [
  [10, 1, Buffer.concat([str('sluice-start-probe'), Buffer.from([0])])], // FindCoordinator v1, group
  [10, 1, Buffer.concat([str('sluice-start-probe'), Buffer.from([1])])], // FindCoordinator v1, transaction
  [22, 0, Buffer.from([0xff, 0xff, 0, 0, 0xea, 0x60])], // InitProducerId v0, no transactional id, 60 s
];
async function clientsReady() {
  for (const [apiKey, version, body] of WARMUP) {
    const r = await kafkaRequest(apiKey, version, body);
    if (!Buffer.isBuffer(r) || r.length < 6 || r.readInt16BE(4) !== 0) return false;
  }
  return true;
}

function need(cmd, args, hint) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  if (r.error) die(`'${cmd}' not found on PATH; ${hint}`);
}

function fetchJars() {
  if (fs.existsSync(path.join(LIB, `kafka_2.13-${VERSION}.jar`))) return;
  need('mvn', ['-v'], 'install Maven 3 (Debian: apt-get install maven) to fetch the Kafka jars.');
  say(`fetching Kafka ${VERSION} jars from Maven Central into ${LIB} ...`);
  const tmp = `${LIB}.tmp-${process.pid}`;
  const t0 = Date.now();
  const r = spawnSync(
    'mvn',
    ['-q', '-B', '-Dstyle.color=never', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`],
    { stdio: ['ignore', 2, 2] },
  ); // keep our stdout clean
  if (r.status !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    die(`mvn dependency:copy-dependencies failed (exit ${r.status})`);
  }
  fs.rmSync(LIB, { recursive: true, force: true });
  fs.renameSync(tmp, LIB);
  say(`jars fetched in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

function writeConfig() {
  fs.mkdirSync(DATA, { recursive: true });
  fs.writeFileSync(
    PROPS,
    `# written by scripts/kafka/start.mjs
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@${HOST}:${CONTROLLER_PORT}
listeners=PLAINTEXT://${HOST}:${PORT},CONTROLLER://${HOST}:${CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://${HOST}:${PORT}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=${DATA}
num.partitions=3
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.consumer.heartbeat.interval.ms=500
group.consumer.min.heartbeat.interval.ms=500
group.consumer.session.timeout.ms=10000
group.consumer.min.session.timeout.ms=10000
`,
  );
  fs.writeFileSync(
    LOG4J,
    `# written by scripts/kafka/start.mjs
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.raft.name = org.apache.kafka.raft
logger.raft.level = warn
logger.controller.name = org.apache.kafka.controller
logger.controller.level = warn
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = warn
`,
  );
}

function java(args, opts) {
  const heap = (process.env.KAFKA_HEAP_OPTS || '-Xmx512m -Xms256m').split(/\s+/).filter(Boolean);
  const jvm = [
    ...heap,
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-XX:InitiatingHeapOccupancyPercent=35',
    '-XX:+ExplicitGCInvokesConcurrent',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${LOG4J}`,
    `-Dkafka.logs.dir=${RUN}`,
  ];
  return [[...jvm, '-cp', path.join(LIB, '*'), ...args], opts];
}

// Serialize concurrent start.mjs runs for the same port (the loser waits, then finds the broker up).
async function lock() {
  fs.mkdirSync(RUN, { recursive: true });
  const file = path.join(RUN, 'start.lock');
  for (;;) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      process.on('exit', () => fs.rmSync(file, { force: true }));
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = 0;
    try {
      holder = Number(fs.readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    if (holder && !alive(holder)) fs.rmSync(file, { force: true });
    else await sleep(250);
  }
}

async function main() {
  await lock();
  let t0 = Date.now();
  const state = await apiVersions();
  if (state !== 'down' && state !== 'kafka') die(`something that is not a Kafka broker answers on ${BOOTSTRAP}`);
  let pid = 0; // 0: a broker already answers, we only wait until it is ready for clients
  if (state === 'kafka') {
    say(`broker already answering on ${BOOTSTRAP}`);
  } else {
    need('java', ['-version'], 'install a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless).');
    pid = Number(fs.existsSync(PIDFILE) && fs.readFileSync(PIDFILE, 'utf8').trim()) || 0;
    if (pid && isBroker(pid)) {
      say(`broker pid ${pid} is already starting; waiting for it`);
    } else {
      fetchJars();
      if (FRESH) {
        say(`--fresh: removing ${DATA}`);
        fs.rmSync(DATA, { recursive: true, force: true });
      }
      writeConfig();
      if (!fs.existsSync(path.join(DATA, 'meta.properties'))) {
        say(`formatting ${DATA} (cluster id ${CLUSTER_ID})`);
        const r = spawnSync(
          'java',
          ...java(['kafka.tools.StorageTool', 'format', '--ignore-formatted', '-t', CLUSTER_ID, '-c', PROPS], {
            encoding: 'utf8',
          }),
        );
        if (r.status !== 0) die(`storage format failed:\n${r.stdout}${r.stderr}`);
      }
      const out = fs.openSync(LOG, 'w');
      const child = spawn('java', ...java(['kafka.Kafka', PROPS], { detached: true, stdio: ['ignore', out, out] }));
      child.unref();
      fs.closeSync(out);
      pid = child.pid;
      t0 = Date.now(); // the timeout covers the broker's startup, not the jar fetch
      fs.writeFileSync(PIDFILE, `${pid}\n`);
      say(`started broker pid ${pid} (log ${LOG})`);
    }
  }

  // The whole log is searched, and a match remembered: a broker with much old data logs thousands of
  // lines (one per stored group) after the "started" line.
  let started = !pid;
  while (Date.now() - t0 < TIMEOUT_MS) {
    if (pid && !alive(pid)) {
      fs.rmSync(PIDFILE, { force: true });
      die(`broker exited during startup; log tail:\n${logTail()}`);
    }
    started ||= STARTED.test(readLog());
    if (started && (await apiVersions()) === 'kafka' && (await clientsReady())) {
      say(`broker ready on ${BOOTSTRAP} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      console.log(`KAFKA_BROKERS=${BOOTSTRAP}`);
      return;
    }
    await sleep(300);
  }
  if (pid) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
    fs.rmSync(PIDFILE, { force: true });
  }
  die(`broker not ready after ${TIMEOUT_MS / 1000} s${pid ? ' (killed)' : ''}; log tail:\n${logTail()}`);
}

main().catch((e) => die(e.stack || String(e)));
