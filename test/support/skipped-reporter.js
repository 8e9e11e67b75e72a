/**
 * Lists every skipped test at the end of a Jest run, by its full title. Jest's default reporter
 * only counts them ("2 skipped") and drops what a skipped file prints, so a skipped suite says why
 * in its title (e.g. "needs MONGODB_URI, which is not set") and this reporter shows it.
 */
class SkippedReporter {
  constructor(globalConfig) {
    // With -t, every test left out counts as skipped: nothing worth listing then.
    this.filtered = Boolean(globalConfig.testNamePattern);
  }

  onRunComplete(_contexts, results) {
    if (this.filtered) return;
    const skipped = results.testResults.flatMap((file) => file.testResults.filter((test) => test.status === 'pending').map((test) => test.fullName));
    if (skipped.length === 0) return;
    process.stderr.write(`\nSkipped (${skipped.length}):\n${skipped.map((name) => `  - ${name}\n`).join('')}`);
  }
}

module.exports = SkippedReporter;
