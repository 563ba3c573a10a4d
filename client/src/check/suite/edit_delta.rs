//! Delta under edits (proto.delta-request.4): on a wildcard stream, new resources are sent,
//! an edit of one is sent, and deleting their file removes them (deleting-resources.1). That
//! the edit is sent alone is the server's choice (delta.1 allows it; a resource sent again
//! unchanged is judged by resource-update.1 if the whole response says nothing new).

use std::collections::BTreeSet;

use super::edit::{own, remove, write};
use super::resources::cluster;
use super::{Ctx, Step, judged};
use crate::check::case::Case;
use crate::check::conversation::{Conv, Miss};
use crate::check::report::Outcome;

/// Responses of `conv`'s type until each of `names` was sent (or, with `removed`, removed).
async fn until_all(
    ctx: &Ctx,
    conv: &mut Conv,
    names: &[&str],
    removed: bool,
) -> Result<Vec<String>, Miss> {
    let url = conv.case().type_url;
    let mut left: BTreeSet<&str> = names.iter().copied().collect();
    let mut shown = Vec::new();
    conv.until(url, ctx.push_timeout, |s| {
        left.retain(|n| if removed { !s.removes(n) } else { !s.has(n) });
        shown.push(s.shown.clone());
        left.is_empty()
    })
    .await?;
    Ok(shown)
}

pub(super) async fn delta_changes(ctx: &mut Ctx, case: Case, stem: &str) -> Step<Outcome> {
    let url = case.type_url;
    let (x, y) = (own(ctx, "delta-x"), own(ctx, "delta-y"));
    let mut conv = ctx.conv(case);
    ctx.ask_for(&mut conv, url, &[]).await?;
    write(ctx, stem, &[cluster(&x, 1), cluster(&y, 1)])?;
    let what =
        format!("a new file with clusters {x} and {y} on a wildcard stream: not both were sent");
    let added = until_all(ctx, &mut conv, &[&x, &y], false).await;
    let outcome = async {
        judged(added, what)?;
        write(ctx, stem, &[cluster(&x, 2), cluster(&y, 1)])?;
        let what = format!("the edit of cluster {x} was not sent");
        let edited = judged(until_all(ctx, &mut conv, &[&x], false).await, what)?;
        remove(ctx, stem)?;
        let what = format!("deleting the file of {x} and {y}: they were not both removed");
        let removed = judged(until_all(ctx, &mut conv, &[&x, &y], true).await, what)?;
        Ok(Outcome::Pass(format!(
            "the edit of {x} came ({}); deleting the file removed both ({})",
            edited.join("; "),
            removed.join("; ")
        )))
    }
    .await;
    conv.finish(ctx.quiet).await;
    outcome
}
