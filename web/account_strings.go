package web

// Strings of the account page and invitation links (instructor_account.go).
func init() {
	addStrings("zh", map[string]string{
		"acct.title":         "教师账号",
		"acct.link":          "账号",
		"acct.instructors":   "教师",
		"acct.you":           "你",
		"acct.invite":        "邀请另一位教师",
		"acct.invite.lede":   "生成一个一次性链接，发给另一位教师：打开后自己设置用户名和密码。链接 72 小时内有效，只能用一次。",
		"acct.invite.submit": "生成邀请链接",
		"acct.invite.made":   "邀请链接已生成（只显示这一次），有效期至",
		"acct.pw":            "修改我的密码",
		"acct.pw.current":    "当前密码",
		"acct.pw.submit":     "修改密码",
		"acct.pw.saved":      "密码已修改；你在其他设备上的登录已失效。",
		"acct.pw.wrong":      "当前密码不正确。",
		"acct.pw.invalid":    "新密码需要 %d 到 %d 个字符（字节）。",
		"acct.join.title":    "加入教师团队",
		"acct.join.lede":     "你收到了一个教师邀请。请设置用户名和密码（至少 10 个字符）。",
		"acct.join.invalid":  "这个邀请链接无效：它已被使用或已过期。请向邀请你的教师要一个新链接。",
		"acct.join.rules":    "用户名 1 到 %d 个字符且不含空格；密码 %d 到 %d 个字符。",
		"acct.join.taken":    "这个用户名已被使用，请换一个。",
	})
	addStrings("en", map[string]string{
		"acct.title":         "Instructor accounts",
		"acct.link":          "Accounts",
		"acct.instructors":   "Instructors",
		"acct.you":           "you",
		"acct.invite":        "Invite another instructor",
		"acct.invite.lede":   "Make a one-time link and send it to another instructor, who then chooses a username and password. The link works once, for 72 hours.",
		"acct.invite.submit": "Make an invitation link",
		"acct.invite.made":   "Invitation link made (shown only now), valid until",
		"acct.pw":            "Change my password",
		"acct.pw.current":    "Current password",
		"acct.pw.submit":     "Change password",
		"acct.pw.saved":      "Password changed; your sessions on other devices have ended.",
		"acct.pw.wrong":      "The current password is wrong.",
		"acct.pw.invalid":    "The new password must have %d to %d characters (bytes).",
		"acct.join.title":    "Join as an instructor",
		"acct.join.lede":     "You were invited as an instructor. Choose a username and a password (at least 10 characters).",
		"acct.join.invalid":  "This invitation link is invalid: it was used or has expired. Ask the instructor who invited you for a new one.",
		"acct.join.rules":    "The username must have 1 to %d characters and no spaces; the password %d to %d characters.",
		"acct.join.taken":    "This username is taken; choose another.",
	})
}
