//! `longrun demo`: a whole init + continue run on a bundled spec with the
//! bundled scripted model. No key, no network.

use std::path::PathBuf;

use anyhow::Context;

use super::continue_run::{continue_run, ContinueArgs};
use super::init::{init, InitArgs};
use super::status::{log, status};
use crate::error::{bad_input, Outcome};
use crate::templates::{DEMO_MODEL, DEMO_SPEC, DEMO_TOML};

pub struct DemoArgs {
    pub dir: Option<PathBuf>,
    /// `--profile`: the sandbox profile the demo's sessions run under.
    pub profile: Option<String>,
}

pub async fn demo(args: DemoArgs) -> anyhow::Result<Outcome> {
    // Before anything is written: a machine that cannot confine the demo's sessions.
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let profile_name = args.profile.as_deref().unwrap_or("default");
    let profile = crate::sandbox::Profile::resolve(profile_name, &cwd)
        .with_context(|| format!("--profile {profile_name}"))?;
    crate::sandbox::preflight(&profile)?;
    // A profile file is passed on by its absolute path: init runs in the demo's directory.
    let profile_arg = args.profile.as_ref().map(|p| {
        if crate::sandbox::bundled_names().contains(&p.as_str()) {
            p.clone()
        } else {
            cwd.join(p).display().to_string()
        }
    });
    let dir = match args.dir {
        Some(d) => {
            if d.exists() && std::fs::read_dir(&d)?.next().is_some() {
                return Err(bad_input(format!(
                    "{} is not empty; give the demo a new directory",
                    d.display()
                )));
            }
            std::fs::create_dir_all(&d)?;
            d
        }
        None => tempfile::Builder::new()
            .prefix("longrun-demo-")
            .tempdir()
            .context("failed to make a directory for the demo")?
            .keep(),
    };
    let dir = dir.canonicalize()?;
    println!("demo project: {}", dir.display());
    let model = dir.join(".longrun").join("demo-model.json");
    std::fs::create_dir_all(dir.join(".longrun"))?;
    std::fs::write(&model, DEMO_MODEL)?;
    std::fs::write(dir.join("SPEC.md"), DEMO_SPEC)?;
    std::fs::write(
        dir.join("longrun.toml"),
        DEMO_TOML.replace("{{model}}", &model.display().to_string()),
    )?;

    let outcome = init(InitArgs {
        spec: dir.join("SPEC.md"),
        dir: dir.clone(),
        model: None,
        base_url: None,
        profile: profile_arg.clone(),
        features: None,
        model_for: Vec::new(),
        quiet: false,
        json: false,
        force: false,
        max_wait: super::pause::DEFAULT_MAX_WAIT,
    })
    .await?;
    if outcome != Outcome::Done {
        return Ok(outcome);
    }
    let args = ContinueArgs {
        until_done: true,
        profile: profile_arg,
        ..ContinueArgs::new(dir.clone())
    };
    let outcome = continue_run(args).await?;
    println!("\n$ longrun status --dir {}", dir.display());
    print!("{}", status(&dir, false, false)?);
    println!("\n$ longrun log --dir {}", dir.display());
    print!("{}", log(&dir, false, false)?);
    println!(
        "\nThe audit log with plain git: git -C {} log --first-parent",
        dir.display()
    );
    Ok(outcome)
}
