"""Small library lending ledger: who borrowed which book, when it is due, and what is owed."""

import csv
import datetime
import json
import os

DAILY_FINE = 0.25
MAX_FINE = 10.0
LOAN_DAYS = 21


class Book:
    def __init__(self, isbn, title, author, copies=1):
        self.isbn = isbn
        self.title = title
        self.author = author
        self.copies = copies
        self.on_loan = 0

    def available(self):
        return self.copies - self.on_loan


class Loan:
    def __init__(self, book, member, start, days=LOAN_DAYS):
        self.book = book
        self.member = member
        self.start = start
        self.due = start + datetime.timedelta(days=days)
        self.returned = None

    def is_open(self):
        return self.returned is None

    def days_late(self, today):
        end = self.returned or today
        late = (end - self.due).days
        return max(late, 0)

    def fine(self, today):
        return min(self.days_late(today) * DAILY_FINE, MAX_FINE)


class Ledger:
    def __init__(self):
        self.books = {}
        self.loans = []
        self.members = set()

    def add_book(self, book):
        if book.isbn in self.books:
            self.books[book.isbn].copies += book.copies
        else:
            self.books[book.isbn] = book

    def join(self, member):
        self.members.add(member)

    def lend(self, isbn, member, today=None):
        if member not in self.members:
            raise ValueError("unknown member: " + member)
        book = self.books.get(isbn)
        if book is None:
            raise KeyError(isbn)
        if book.available() <= 0:
            return None
        today = today or datetime.date.today()
        loan = Loan(book, member, today)
        book.on_loan += 1
        self.loans.append(loan)
        return loan

    def give_back(self, isbn, member, today=None):
        today = today or datetime.date.today()
        for loan in self.loans:
            if loan.book.isbn == isbn and loan.member == member and loan.is_open():
                loan.returned = today
                loan.book.on_loan -= 1
                return loan.fine(today)
        raise LookupError("no open loan of %s for %s" % (isbn, member))

    def overdue(self, today):
        result = []
        for loan in self.loans:
            if loan.is_open() and loan.days_late(today) > 0:
                result.append(loan)
        result.sort(key=lambda loan: loan.due)
        return result

    def owed_by(self, member, today):
        total = 0.0
        for loan in self.loans:
            if loan.member == member:
                total += loan.fine(today)
        return round(total, 2)


def load_catalogue(path):
    ledger = Ledger()
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            copies = int(row.get("copies") or 1)
            ledger.add_book(Book(row["isbn"], row["title"], row["author"], copies))
    return ledger


def save_report(ledger, today, path):
    report = {
        "date": today.isoformat(),
        "overdue": [
            {"isbn": loan.book.isbn, "member": loan.member, "days": loan.days_late(today)}
            for loan in ledger.overdue(today)
        ],
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(report, handle, indent=2)
    os.replace(tmp, path)
    return report
