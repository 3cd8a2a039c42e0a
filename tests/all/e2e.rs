//! The whole path: init, continue, verify, the git audit log.

use crate::common::*;

#[test]
fn demo_builds_every_feature_and_records_each_session() {
    let env = Env::new();
    let dir = env.project();
    let out = env.run(&["demo", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    // Its status is printed after the run: no run is in progress any more.
    assert!(
        !stdout(&out).contains("a run is in progress"),
        "{}",
        text(&out)
    );
    let log = env.log_json();
    let verdicts: Vec<&str> = log.iter().map(|s| s["verdict"].as_str().unwrap()).collect();
    assert_eq!(
        verdicts,
        ["accepted", "accepted", "rejected", "accepted", "accepted"]
    );
    let features: serde_json::Value =
        serde_json::from_str(&env.on_main("features.json").unwrap()).unwrap();
    assert!(features["features"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["passes"] == true));
    // One first-parent commit per session, plus the spec commit.
    let first_parent = env.git(&["log", "--first-parent", "--format=%s"]);
    assert_eq!(first_parent.lines().count(), 6, "{first_parent}");
}
