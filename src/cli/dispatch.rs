//! From a parsed command line to the command's run document: the shared
//! groups resolved once, then one function per command that needs more
//! than a call.

use std::path::{Path, PathBuf};

use super::schema::{Cli, Command, DebugAction, ImportSource, ResultsAction, SimAction, TraceEvents};
use super::{Output, output, print};
use crate::args::{Common, Engine, WriteArgs};
use crate::command::{debug, offline, probe, restore, results};
use crate::document::RunDocument;
use crate::document::bodies::{Body, ReportBody, ReportWritten};
use crate::error::CliResult;
use crate::format::FormatKind;
use crate::measure::TestCommand;
use crate::places::Places;
use crate::runner::Resolved;
use crate::runner::writable::Consent;
use crate::targets::real::EngineChoice;

/// What this invocation brings besides its command: an --engine given
/// before the command, and the places the environment names (read once,
/// here at the edge).
struct Invocation {
    before: Option<Engine>,
    places: Places,
}

/// The shared groups, resolved once: the target (the built-in card when
/// none is given, said so), the engine (the command's own --engine, else
/// one given before the command, else auto), the consent, the store.
fn resolve(common: &Common, write: Option<&WriteArgs>, at: &Invocation) -> Resolved {
    let target = common.target.clone().unwrap_or_else(|| {
        let line = format!(
            "no TARGET given: measuring {}, the built-in simulated card",
            crate::targets::spec::DEFAULT_TARGET
        );
        crate::errln!("{}", crate::console::wrap(&line, "", ""));
        crate::args::TargetArg::default_card()
    });
    crate::console::stdio::set_verbose(common.verbose);
    let (store, fleet) = stores(&common.store, &at.places);
    Resolved {
        target,
        engine: engine(common.engine.engine, at.before),
        consent: write.map(|w| Consent::new(w, &at.places)).unwrap_or_default(),
        store,
        store_named: at.places.store_named_by(common.store.db.as_deref()),
        fleet,
        label: common.label.clone(),
    }
}

/// `--db` and `--no-store` resolved: the local store a run is saved in,
/// and the fleet it is uploaded to (`--db postgres://...`); neither with
/// `--no-store`.
fn stores(s: &crate::args::StoreArgs, places: &Places) -> (Option<PathBuf>, Option<String>) {
    if s.no_store {
        return (None, None);
    }
    (places.store_or(s.db.as_deref()), places.fleet_or(s.db.as_deref()))
}

fn engine(own: Option<Engine>, before: Option<Engine>) -> EngineChoice {
    own.or(before).unwrap_or(Engine::Auto).into()
}

pub(super) fn run(cli: Cli, kind: FormatKind) -> CliResult<Output> {
    let at = Invocation {
        before: cli.engine_before,
        places: Places::from_env(),
    };
    let json = kind == FormatKind::Json;
    let mut result = dispatch(cli.command, json, &at);
    // A Ctrl-C or SIGTERM that came after the last write (while the last
    // step restored its data) is honoured now: the run stops with its
    // signal's exit code, its results printed and saved.
    if let (Some(signal), Ok(Output::Doc(_))) = (crate::safety::signals::pending(), &result)
        && let Ok(Output::Doc(doc)) = std::mem::replace(&mut result, Ok(Output::Raw(String::new())))
    {
        result = Err(crate::error::interrupted(signal).with_document(*doc));
    }
    result
}

fn dispatch(command: Command, json: bool, at: &Invocation) -> CliResult<Output> {
    let before = at.before;
    let doc = match command {
        Command::Info { common, registers } => crate::command::info(&resolve(&common, None, at), registers)?,
        Command::Test(t) => return test(&t, json, at),
        Command::Probe {
            common,
            erase_size,
            html,
            write,
        } => probe_with_report(&common, erase_size, html, &write, at)?,
        Command::Results { db, action } => {
            let local = at.places.store_or(db.as_deref());
            let fleet = at.places.fleet_or(db.as_deref());
            let named = at.places.store_named_by(db.as_deref());
            return results_action(local.as_deref(), fleet.as_deref(), named, action);
        }
        Command::Report {
            mut runs,
            batch,
            output,
            db,
        } => {
            let local = at.places.store_or(db.as_deref());
            let fleet = at.places.fleet_or(db.as_deref());
            let from = stored(local.as_deref(), fleet.as_deref());
            if let Some(id) = batch {
                runs.extend(results::batch_runs(from, &id)?.iter().map(i64::to_string));
            }
            report(runs, output, from)?
        }
        Command::Sim { action } => return sim(action),
        Command::Emulate {
            spec,
            time_scale,
            backing,
            record,
            json,
            cleanup,
            force,
        } => return emulate(spec, time_scale, (backing, record), json, (cleanup, force), &at.places),
        Command::Import { source } => import(source, &at.places)?,
        Command::Trace {
            device,
            duration,
            output,
        } => crate::command::trace::run(&crate::command::trace::Options {
            device,
            duration_ns: duration,
            prefix: output,
        })?,
        Command::Life(args) => life(args, &at.places)?,
        Command::Batch(args) => batch(args, at)?,
        // They print a script and a manual page, never a JSON document
        // (--json printed roff).
        ref c @ (Command::Completions { .. } | Command::Man { .. }) if json => {
            let example = if matches!(c, Command::Man { .. }) {
                "`flashlab man > flashlab.1`"
            } else {
                "`flashlab completions bash > flashlab.bash`"
            };
            return Err(crate::error::CliError::usage(
                "man and completions print a manual page or a shell script, not JSON".to_string(),
            )
            .hint(format!("drop --json, as in {example}")));
        }
        Command::Completions { shell } => return Ok(Output::Raw(super::completions::script(shell))),
        Command::Man { command, dir } => return super::man::man(&command, dir.as_deref()),
        Command::Decode { register, hex, mmc } => offline::decode(register.into(), &hex.join(" "), mmc)?,
        Command::Restore {
            what,
            force,
            set_aside,
            journal_dir,
            engine: e,
        } => restore::run(
            what.as_deref(),
            force,
            set_aside,
            journal_dir.as_deref(),
            &at.places.journals,
            engine(e.engine, before),
        )?,
        Command::Debug {
            action:
                DebugAction::WritePattern {
                    target,
                    ranges,
                    passes,
                    pause_ms,
                    opts,
                    engine: e,
                },
        } => debug::run(
            &target,
            ranges,
            passes,
            pause_ms,
            &Consent::new(&opts, &at.places),
            engine(e.engine, before),
        )?,
    };
    Ok(Output::Doc(Box::new(doc)))
}

/// A measuring test.
fn test(t: &TestCommand, json: bool, at: &Invocation) -> CliResult<Output> {
    let r = resolve(t.common(), t.consent(), at);
    let doc = crate::command::test(t, &r)?;
    // scatter --csv: the points, in the format that draws them elsewhere.
    if let (TestCommand::Scatter(a), false) = (t, json)
        && a.csv
    {
        return Ok(Output::As(Box::new(doc), Box::new(crate::format::csv::Csv)));
    }
    Ok(Output::Doc(Box::new(doc)))
}

/// `probe`, and its report with --html.
fn probe_with_report(
    common: &Common,
    erase_size: Option<u64>,
    html: Option<PathBuf>,
    write: &WriteArgs,
    at: &Invocation,
) -> CliResult<RunDocument> {
    let r = resolve(common, Some(write), at);
    // A report that cannot be written is refused before the probe, not after.
    if let Some(path) = &html {
        let store = r.store.as_deref().map(|s| (s, "the results store this run is kept in"));
        output::check_report_path(path, &[&r.target.text], store.as_slice())?;
    }
    let doc = probe::probe(&r, erase_size)?;
    if let Some(path) = html {
        let path = output::write_report(&path, &crate::format::one(&doc))?;
        crate::errln!("report written to {}", path.display());
    }
    Ok(doc)
}

/// Where `results` and `report` read: the fleet where one is named.
fn stored<'a>(local: Option<&'a Path>, fleet: Option<&'a str>) -> results::Stored<'a> {
    match fleet {
        Some(url) => results::Stored::Fleet(url),
        None => results::Stored::Local(local),
    }
}

/// `results list`, `show`, `compare`, `export`, `import` and `upload`.
/// `named`: whether the user named the store, so the commands a listing or
/// an import suggests name it too.
fn results_action(db: Option<&Path>, fleet: Option<&str>, named: bool, action: ResultsAction) -> CliResult<Output> {
    let from = stored(db, fleet);
    let doc = match action {
        ResultsAction::List {
            device,
            batch,
            host,
            label,
        } => results::list(
            from,
            results::Filter {
                device: device.as_deref(),
                batch: batch.as_deref(),
                host: host.as_deref(),
                label: label.as_deref(),
            },
            named,
        )?,
        ResultsAction::Show { id, verbose } => {
            crate::console::stdio::set_verbose(verbose);
            results::show(from, id)?
        }
        ResultsAction::Compare { runs } => results::compare(from, &runs)?,
        ResultsAction::Export { id } => return Ok(Output::Raw(results::export(from, id)?)),
        ResultsAction::Import { file } => results::import(db, &file, named)?,
        ResultsAction::Upload => match fleet {
            Some(url) => results::upload(db, url)?,
            None => {
                return Err(crate::error::CliError::usage("results upload needs a fleet store")
                    .hint("give --db postgres://USER@HOST/DB, or set FLASHLAB_DB to one"));
            }
        },
    };
    Ok(Output::Doc(Box::new(doc)))
}

/// `report`: the HTML report of stored runs or run documents.
fn report(runs: Vec<String>, output: Option<PathBuf>, from: results::Stored<'_>) -> CliResult<RunDocument> {
    // A name from the runs where none is given (`report 1`
    // refused without -o): ids as they are, files by their stem.
    let output = output.unwrap_or_else(|| {
        let names: Vec<String> = runs
            .iter()
            .map(|w| {
                let stem = Path::new(w)
                    .file_stem()
                    .map_or(w.clone(), |s| s.to_string_lossy().into_owned());
                stem.chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' })
                    .collect()
            })
            .collect();
        PathBuf::from(format!("flashlab-report-{}.html", names.join("-")))
    });
    // Neither the store the runs come from nor a run document read.
    let mut kept: Vec<(&Path, &str)> = runs
        .iter()
        .filter(|w| w.parse::<i64>().is_err())
        .map(|w| (Path::new(w.as_str()), "a run document this report reads"))
        .collect();
    if let results::Stored::Local(Some(store)) = from {
        kept.push((store, "the results store the runs come from"));
    }
    output::check_report_path(&output, &[], &kept)?;
    let loaded = runs
        .iter()
        .map(|w| results::load(from, w))
        .collect::<CliResult<Vec<_>>>()?;
    // Not over the bytes of a device or file a run measured.
    let targets: Vec<&str> = loaded
        .iter()
        .filter_map(|(_, d)| d.target.as_ref())
        .filter(|t| t.kind != crate::targets::TargetKind::Sim)
        .map(|t| t.spec.as_str())
        .collect();
    output::check_report_path(&output, &targets, &kept)?;
    let output = output::write_report(&output, &loaded)?;
    let mut doc = RunDocument::new(crate::document::CommandName::Report, None);
    doc.body = Body::Report(ReportBody {
        report: ReportWritten {
            path: output.display().to_string(),
            runs,
        },
    });
    doc.finish(None);
    Ok(doc)
}

/// `sim list`, `show` (as TOML with --toml) and `reproduce`.
fn sim(action: SimAction) -> CliResult<Output> {
    let doc = match action {
        SimAction::List => offline::sim_list(),
        SimAction::Show { profile, toml: true } => {
            return Ok(Output::As(
                Box::new(offline::sim_show(&profile)),
                Box::new(crate::format::toml::Toml),
            ));
        }
        SimAction::Show { profile, toml: false } => offline::sim_show(&profile),
        SimAction::Reproduce { experiment } => offline::sim_reproduce(&experiment)?,
    };
    Ok(Output::Doc(Box::new(doc)))
}

/// `emulate`: serve a card until stopped, or clean up after one; it
/// prints its own documents as it goes.
fn emulate(
    spec: Option<crate::args::SimCard>,
    time_scale: f64,
    (backing, record): (Option<PathBuf>, Option<PathBuf>),
    json: bool,
    (cleanup, force): (bool, Option<u32>),
    places: &Places,
) -> CliResult<Output> {
    match (cleanup, spec) {
        (true, _) => crate::command::emulate::cleanup(&places.emulations, force)?,
        (false, Some(spec)) => {
            let format = if json { FormatKind::Json } else { FormatKind::Text }.format();
            crate::command::emulate::run(
                &crate::emulate::Options {
                    spec: spec.spec(),
                    params: *spec.params,
                    time_scale,
                    backing,
                    record,
                    dir: places.emulations.clone(),
                },
                &|doc| {
                    print(doc, &*format);
                },
                // The text summary went to stderr already.
                &|doc| {
                    if json {
                        print(doc, &*format);
                    }
                },
            )?
        }
        (false, None) => {
            return Err(crate::error::CliError::usage("emulate needs a SPEC (sim:PROFILE)")
                .hint("for example `flashlab emulate sim:demo`; `flashlab sim list` names the profiles"));
        }
    }
    Ok(Output::Raw(String::new()))
}

/// `life`: its arguments as the command takes them.
fn life(a: super::schema::LifeArgs, places: &Places) -> CliResult<RunDocument> {
    crate::command::life::run(&crate::command::life::Options {
        trace: a.trace,
        read: crate::import::trace::TraceOptions {
            events: match a.events {
                TraceEvents::D => crate::import::trace::Events::Dispatch,
                TraceEvents::Q => crate::import::trace::Events::Queue,
            },
        },
        offset: a.offset,
        cards: a.card,
        replay: crate::measure::life::Replay {
            start: a.start.into(),
            pe: a.pe,
        },
        coalesce_ns: a.coalesce,
        shift: a.shift,
        no_discard: a.no_discard,
        runs: places.store_or(a.store.db.as_deref()),
        store: stores(&a.store, places).0,
        store_named: places.store_named_by(a.store.db.as_deref()),
    })
}

/// `batch`: the labels file read, the shared groups resolved.
fn batch(a: super::schema::BatchArgs, at: &Invocation) -> CliResult<RunDocument> {
    use super::schema::BatchTest;
    let mut labels = a.label;
    if let Some(path) = &a.labels {
        labels.extend(crate::command::batch::read_labels(path)?);
    }
    crate::command::batch::one_label_each(&labels)?;
    let (store, fleet) = stores(&a.store, &at.places);
    crate::command::batch::run(&crate::command::batch::Options {
        devices: a.devices,
        all_removable: a.all_removable,
        tests: crate::command::batch::Tests {
            capacity: a.tests.contains(&BatchTest::Capacity),
            bench: a.tests.contains(&BatchTest::Bench),
            probe: a.tests.contains(&BatchTest::Probe),
        },
        labels,
        claims: a.claims,
        runtime_ns: a.runtime,
        engine: engine(a.engine.engine, at.before),
        consent: {
            // --destructive is its own consent: to writing, with no journal.
            let mut c = Consent::new(&a.write, &at.places);
            c.write |= a.destructive;
            c.no_preserve |= a.destructive;
            c
        },
        store,
        watch: a.watch,
        destructive: a.destructive,
        fleet,
    })
}

/// `import flashbench`.
fn import(source: ImportSource, places: &Places) -> CliResult<RunDocument> {
    let ImportSource::Flashbench {
        files,
        column,
        device,
        command,
        db,
        no_store,
    } = source;
    crate::command::import::flashbench(&crate::command::import::Options {
        inputs: files,
        column,
        device,
        command,
        store: if no_store { None } else { places.store_or(db.as_deref()) },
        store_named: places.store_named_by(db.as_deref()),
    })
}
