"""A teacher's scores: averages, letters, ranking and CSV."""


class Gradebook:
    def __init__(self):
        self.scores = {}

    def add_score(self, student, assignment, score):
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 100:
            raise ValueError(f"score {score!r} is not between 0 and 100")
        self.scores.setdefault(student, {})[assignment] = score

    def students(self):
        return sorted(self.scores)

    def average(self, student):
        marks = self.scores[student].values()
        return round(sum(marks) / len(marks), 2)

    def assignment_average(self, assignment):
        marks = [s[assignment] for s in self.scores.values() if assignment in s]
        if not marks:
            raise KeyError(assignment)
        return round(sum(marks) / len(marks), 2)

    def letter(self, student):
        avg = self.average(student)
        for floor, letter in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
            if avg >= floor:
                return letter
        return "F"

    def ranking(self):
        return sorted(((s, self.average(s)) for s in self.scores), key=lambda p: (-p[1], p[0]))

    def to_csv(self):
        assignments = sorted({a for s in self.scores.values() for a in s})
        lines = [",".join(["student", *assignments, "average"])]
        for student in self.students():
            cells = [str(self.scores[student].get(a, "")) for a in assignments]
            lines.append(",".join([student, *cells, f"{self.average(student):.2f}"]))
        return "\n".join(lines) + "\n"
