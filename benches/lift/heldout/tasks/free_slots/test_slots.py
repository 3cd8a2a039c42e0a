import unittest

from slots import free_slots

DAY = "09:00-17:00"


class TestFreeSlots(unittest.TestCase):
    def test_no_busy_gives_the_whole_day(self):
        self.assertEqual(free_slots([], DAY), ["09:00-17:00"])

    def test_one_meeting(self):
        self.assertEqual(free_slots(["10:00-11:00"], DAY), ["09:00-10:00", "11:00-17:00"])

    def test_unsorted_and_overlapping(self):
        busy = ["13:00-14:30", "12:00-13:30", "09:30-10:00"]
        self.assertEqual(free_slots(busy, DAY), ["09:00-09:30", "10:00-12:00", "14:30-17:00"])

    def test_touching_intervals_leave_no_gap(self):
        self.assertEqual(free_slots(["10:00-11:00", "11:00-12:00"], DAY), ["09:00-10:00", "12:00-17:00"])

    def test_busy_outside_the_day_is_clipped(self):
        busy = ["07:00-09:30", "16:30-19:00", "18:00-19:00"]
        self.assertEqual(free_slots(busy, DAY), ["09:30-16:30"])

    def test_short_gaps_left_out(self):
        busy = ["09:20-10:00", "10:45-16:50"]
        self.assertEqual(free_slots(busy, DAY, min_minutes=30), ["10:00-10:45"])
        self.assertEqual(free_slots(busy, DAY, min_minutes=45), ["10:00-10:45"])
        self.assertEqual(free_slots(busy, DAY, min_minutes=46), [])

    def test_fully_busy(self):
        self.assertEqual(free_slots(["08:00-18:00"], DAY), [])

    def test_one_digit_hours_read_two_digit_hours_written(self):
        self.assertEqual(free_slots(["8:30-8:45"], "8:00-9:00"), ["08:00-08:30", "08:45-09:00"])

    def test_malformed_busy_interval(self):
        for bad in ["25:00-26:00", "09:60-10:00", "0900-1000", "10:00-09:00", "10:00-10:00", "10:00"]:
            with self.assertRaises(ValueError, msg=bad):
                free_slots([bad], DAY)

    def test_malformed_day(self):
        for bad in ["17:00-09:00", "", "9-17"]:
            with self.assertRaises(ValueError, msg=bad):
                free_slots([], bad)


if __name__ == "__main__":
    unittest.main()
