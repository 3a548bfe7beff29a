//! Cues for how an answer is laid out and what it leaves out, beyond the plain style words of
//! [`CUES`](super::lexicon::CUES): moral commentary nobody asked for, tasks as a checklist to
//! tick, the command to run before its explanation. Matched with the others, as one list.

use super::lexicon::{
    cue, Cue,
    CueKind::{Complaint as C, Thing as T},
};
use super::Aspect as A;
use super::Way::{Less as L, More as M};

pub(super) const LAYOUT_CUES: &[Cue] = &[
    // moral commentary on what is asked
    cue(&["moralis*"], A::Moralising, M, T),
    cue(&["moraliz*"], A::Moralising, M, T),
    cue(&["preach*"], A::Moralising, M, T),
    cue(&["sermon*"], A::Moralising, M, T),
    cue(&["ethics", "lecture*"], A::Moralising, M, T),
    cue(&["moral", "lecture*"], A::Moralising, M, T),
    cue(&["moral", "commentary"], A::Moralising, M, T),
    cue(&["lecturing"], A::Moralising, M, T),
    cue(&["lecture", "me"], A::Moralising, M, T),
    cue(&["judge", "my"], A::Moralising, M, T),
    cue(&["judgy"], A::Moralising, L, C),
    cue(&["judgmental"], A::Moralising, L, C),
    cue(&["judgemental"], A::Moralising, L, C),
    cue(&["drinking", "responsibly"], A::Moralising, M, T),
    cue(&["drink", "responsibly"], A::Moralising, M, T),
    // tasks as boxes to tick
    cue(&["checklist*"], A::Checklist, M, T),
    cue(&["check", "list*"], A::Checklist, M, T),
    cue(&["checkbox*"], A::Checklist, M, T),
    cue(&["check", "box*"], A::Checklist, M, T),
    cue(&["tick", "off"], A::Checklist, M, T),
    cue(&["tick", "them", "off"], A::Checklist, M, T),
    cue(&["tickable"], A::Checklist, M, T),
    cue(&["check", "off"], A::Checklist, M, T),
    cue(&["checking", "things", "off"], A::Checklist, M, T),
    cue(&["to", "do", "list*"], A::Checklist, M, T),
    // the command first, the explanation after
    cue(&["command", "first"], A::CommandFirst, M, T),
    cue(&["commands", "first"], A::CommandFirst, M, T),
    cue(&["command", "up", "top"], A::CommandFirst, M, T),
    cue(&["cmd", "up", "top"], A::CommandFirst, M, T),
    cue(&["command", "at", "the", "top"], A::CommandFirst, M, T),
    cue(&["what", "to", "type", "first"], A::CommandFirst, M, T),
    cue(&["code", "first"], A::CommandFirst, M, T),
    cue(&["code", "at", "the", "top"], A::CommandFirst, M, T),
    cue(&["snippet", "at", "the", "top"], A::CommandFirst, M, T),
    cue(&["command", "at", "the", "bottom"], A::CommandFirst, L, T),
];

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn moralising_checklists_and_the_command_first_are_read() {
        assert_eq!(
            asked("I didn't ask for a lecture on ethics. no moralizing"),
            ["MoralisingLess"]
        );
        assert_eq!(
            asked("stop preaching about portion sizes"),
            ["MoralisingLess"]
        );
        assert_eq!(asked("you're being so judgmental"), ["MoralisingLess"]);
        assert_eq!(
            asked("make the moving tasks a checklist I can tick off"),
            ["ChecklistMore"]
        );
        assert_eq!(
            asked("put the command first, the explanation after"),
            ["CommandFirstMore"]
        );
    }

    #[test]
    fn no_longer_is_a_change_not_a_length() {
        assert_eq!(
            asked("I no longer eat gluten-free, bread is fine"),
            Vec::<String>::new()
        );
        assert_eq!(asked("answers could be longer"), ["LengthMore"]);
    }
}
