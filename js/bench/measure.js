// The timed part the benchmarks share: warm-up calls, then sequential calls, each timed,
// printed as one JSON object (see latency.js for the fields).

/**
 * @param {{host: string, fixture: string, calls: number, warmup: number,
 *   echo: (text: string) => Promise<void>}} run `echo` makes one call and throws unless
 *   the server echoed `text`
 */
export async function measure({ host, fixture, calls, warmup, echo }) {
  for (let i = 0; i < warmup; i++) {
    await echo(`warm ${i}`);
  }
  const samples = [];
  const cpu = process.cpuUsage();
  const slept = process.resourceUsage().voluntaryContextSwitches;
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await echo(`call ${i}`);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  const total = Number(process.hrtime.bigint() - started) / 1e3;
  const used = process.cpuUsage(cpu);
  const sleeps = process.resourceUsage().voluntaryContextSwitches - slept;

  samples.sort((a, b) => a - b);
  const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
  const round = (us) => Math.round(us * 10) / 10;
  console.log(
    JSON.stringify({
      host,
      node: process.version,
      fixture,
      calls,
      median_us: round(at(0.5)),
      p90_us: round(at(0.9)),
      p99_us: round(at(0.99)),
      mean_us: round(total / calls),
      cpu_us: round((used.user + used.system) / calls),
      sleeps_per_call: round(sleeps / calls),
    }),
  );
}
