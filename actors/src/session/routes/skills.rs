//! Skills and personas: files under `$RUMMY_HOME/skills` and `/personas` — listed, added to a
//! run as `skill://<name>` (its frontmatter checked first: invalid, the skill is refused with
//! the field named) or set as its persona.

use crate::clock::now;
use crate::errors::Error;
use crate::session::call::Call;
use rummy_core::tools::TOOL_ORDER;
use rummy_core::wire::params::{NoParams, PersonaParams, RunParams, SkillParams};
use rummy_core::wire::results::{Done, NamedFile, RunSkill, SkillAck, SkillFile};
use rummy_core::wire::{ErrorKind, RpcError};
use rummy_store::skill::{self, Skill, SkillMeta};
use rummy_store::skills;
use std::path::PathBuf;

/// Reads `<dir>/<name>.md`; a missing file is -32004.
async fn read_named(dir: PathBuf, kind: &'static str, name: String) -> Result<String, Error> {
    let path = skills::file_of(&dir, &name)?;
    actix_rt::task::spawn_blocking(move || std::fs::read_to_string(&path))
        .await?
        .map_err(|_| {
            Error::Rpc(RpcError::new(
                ErrorKind::NotFound,
                format!("{kind} \"{name}\" not found in {}", dir.display()),
            ))
        })
}

/// The `.md` files of `dir`: `[{name, path}]`.
async fn list_named(dir: PathBuf) -> Result<Vec<NamedFile>, Error> {
    let list = actix_rt::task::spawn_blocking(move || skills::list_dir(&dir)).await?;
    Ok(list
        .into_iter()
        .map(|(name, path)| NamedFile { name, path })
        .collect())
}

/// The skill `name`'s file, read and its frontmatter checked (invalid: -32602 naming the field).
async fn load(call: &Call, name: &str) -> Result<Skill, Error> {
    let text = read_named(call.home("skills"), "skill", name.to_owned()).await?;
    skill::parse(name, &text, &TOOL_ORDER).map_err(|e| {
        RpcError::new(ErrorKind::InvalidParams, format!("skill \"{name}\": {e}")).into()
    })
}

/// The skills a run start or continuation names (`attributes.skills`), each loaded and checked
/// before anything is written.
pub async fn load_all(call: &Call, names: &[String]) -> Result<Vec<(String, Skill)>, Error> {
    let mut loaded = Vec::with_capacity(names.len());
    for name in names {
        loaded.push((name.clone(), load(call, name).await?));
    }
    Ok(loaded)
}

/// `skill/add`: the skill's file, its frontmatter checked, added to the run as
/// `skill://<name>`; the project files its `paths` match become visible.
pub async fn skill_add(call: Call, p: SkillParams) -> Result<SkillAck, Error> {
    let run = call.run(&p.run).await?;
    let parsed = load(&call, &p.name).await?;
    let (rr, divisor, name) = (run.run_ref(), call.divisor(), p.name.clone());
    let (path, _) = call
        .write(move |c| skills::add(c, rr, &name, &parsed, crate::clock::write_ctx(divisor)))
        .await?;
    Ok(SkillAck {
        ok: true,
        skill: p.name,
        path,
    })
}

/// `skill/remove`: takes the skill out of the run.
pub async fn skill_remove(call: Call, p: SkillParams) -> Result<Done, Error> {
    let run = call.run(&p.run).await?;
    call.write(move |c| skills::remove(c, run.id, &p.name))
        .await?;
    Ok(Done::OK)
}

/// `getSkills`: the run's skills and their states.
pub async fn get_skills(call: Call, p: RunParams) -> Result<Vec<RunSkill>, Error> {
    let run = call.run(&p.run).await?;
    let list = call.read(move |c| skills::of_run(c, run.id)).await?;
    Ok(list
        .into_iter()
        .map(|s| {
            let meta = SkillMeta::from_attributes(&s.attributes);
            RunSkill {
                name: s.name,
                state: s.state.into(),
                active: s.active,
                description: meta.description,
                when_to_use: meta.when_to_use,
                allowed_tools: meta.allowed_tools,
                paths: meta.paths,
                memory_scope: meta.memory_scope.map(|m| m.name().to_owned()),
            }
        })
        .collect())
}

/// `listSkills`: the skills the server's home holds, with what their frontmatter says of them
/// (or why it is invalid).
pub async fn list_skills(call: Call, _: NoParams) -> Result<Vec<SkillFile>, Error> {
    let dir = call.home("skills");
    let list = actix_rt::task::spawn_blocking(move || {
        skills::list_dir(&dir)
            .into_iter()
            .map(|(name, path)| {
                let read = std::fs::read_to_string(&path).map_err(|e| e.to_string());
                let parsed = read.and_then(|text| {
                    skill::parse(&name, &text, &TOOL_ORDER).map_err(|e| e.to_string())
                });
                let (meta, error) = match parsed {
                    Ok(s) => (s.meta, None),
                    Err(e) => (SkillMeta::default(), Some(e)),
                };
                SkillFile {
                    name,
                    path,
                    description: meta.description,
                    when_to_use: meta.when_to_use,
                    error,
                }
            })
            .collect()
    })
    .await?;
    Ok(list)
}

/// `listPersonas`: the personas the server's home holds.
pub async fn list_personas(call: Call, _: NoParams) -> Result<Vec<NamedFile>, Error> {
    list_named(call.home("personas")).await
}

/// `persona/set`: the run's persona from a file or as text; neither clears it.
pub async fn persona_set(call: Call, p: PersonaParams) -> Result<Done, Error> {
    let run = call.run(&p.run).await?;
    let persona = match (p.name, p.text) {
        (Some(_), Some(_)) => {
            return Err(
                RpcError::invalid_param("name", "give a persona name or text, not both").into(),
            )
        }
        (Some(name), None) => Some(read_named(call.home("personas"), "persona", name).await?),
        (None, Some(text)) => Some(text).filter(|t| !t.trim().is_empty()),
        (None, None) => None,
    };
    call.write(move |c| skills::set_persona(c, run.id, persona.as_deref(), now()))
        .await?;
    Ok(Done::OK)
}
